"""Fixtures shared by the integration tier."""

import pytest

from helpers.ray_local import local_ray


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster for the module's tests (helpers.ray_local), shut down after them."""
    with local_ray() as ray:
        yield ray
