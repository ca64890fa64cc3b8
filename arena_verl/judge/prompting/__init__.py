"""What a judge is shown: the templates (:mod:`.templates`, the built-in files in ``templates/``), a trace's token
budget (:mod:`.budget`), trace hygiene (:mod:`.hygiene`, its detection copy in :mod:`.detection_copy`) and the chat
messages (:mod:`.messages`). Import from the defining module."""
