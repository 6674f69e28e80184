# Sourced by scripts/test (uses its `stage`). Include directions (issue 18):
# backends/ below scheduler/ and core/ (peers kept apart), cli/ and bench/
# on top; scripts/check-layers fails on an include that points up a layer,
# allowing only the listed upward includes that the redesign removes.
stage layers /usr/bin/python3 scripts/check-layers
