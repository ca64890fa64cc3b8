"""Group-sticky routing: rendezvous hashing moves only a removed replica's groups and gives a new one only the groups
it ranks first for; a failed replica leaves the ring for a growing while and comes back when it answers."""

import pytest

from arena_verl.core.rendezvous import ReplicaRing, rendezvous_order

GROUPS = [f"step3/uid{i}" for i in range(2000)]


def owner(ring, group):
    return ring.names[ring.choose(group)]


def test_the_order_is_stable_and_spreads_groups_evenly():
    names = ["http://a/v1", "http://b/v1", "http://c/v1"]
    assert rendezvous_order("g", names) == rendezvous_order("g", list(names))
    ring = ReplicaRing(names)
    shares = {name: sum(owner(ring, g) == name for g in GROUPS) / len(GROUPS) for name in names}
    assert all(abs(share - 1 / 3) < 0.05 for share in shares.values()), shares


def test_removing_a_replica_moves_only_its_groups_and_adding_one_takes_only_its_own():
    three = ReplicaRing(["a", "b", "c"])
    two = ReplicaRing(["a", "c"])
    four = ReplicaRing(["a", "b", "c", "d"])
    for group in GROUPS:
        before = owner(three, group)
        if before != "b":
            assert owner(two, group) == before
        after = owner(four, group)
        assert after in (before, "d")
    taken = sum(owner(four, g) == "d" for g in GROUPS) / len(GROUPS)
    assert 0.2 < taken < 0.3  # about 1 / 4


def test_a_failed_replica_leaves_the_ring_for_a_growing_while_and_returns_when_it_answers():
    now = [0.0]
    ring = ReplicaRing(["a", "b"], first_down_s=5.0, max_down_s=12.0, clock=lambda: now[0])
    group = next(g for g in GROUPS if owner(ring, g) == "a")
    assert ring.failed("a") and owner(ring, group) == "b" and ring.down() == ["a"]
    assert not ring.failed("a")  # a call already in flight failing too does not extend its time out
    now[0] = 5.0
    assert owner(ring, group) == "a"  # tried again after 5 s
    assert ring.failed("a")  # ... and failing again: out for 10 s
    now[0] = 14.9
    assert owner(ring, group) == "b"
    now[0] = 15.0
    ring.failed("a")  # a third failure: 20 s, capped at 12
    now[0] = 27.0
    assert owner(ring, group) == "a" and ring.answered("a")
    ring.failed("a")
    assert ring.down() == ["a"]
    now[0] = 32.0  # forgiven after the answer: out for 5 s again, not 24
    assert ring.down() == []


def test_with_every_replica_out_a_group_still_goes_to_its_first_choice():
    ring = ReplicaRing(["a", "b"], clock=lambda: 0.0)
    ring.failed("a"), ring.failed("b")
    assert all(ring.choose(g) == ring.first_choice(g) for g in GROUPS[:50])


def test_a_new_list_keeps_the_health_of_the_replicas_it_keeps():
    ring = ReplicaRing(["a", "b"], clock=lambda: 0.0)
    ring.failed("b")
    ring.replace(["b", "c"])
    assert ring.down() == ["b"]


@pytest.mark.parametrize("names", [[], ["a", "a"]])
def test_an_empty_or_repeated_list_is_refused(names):
    with pytest.raises(ValueError):
        ReplicaRing(names)
