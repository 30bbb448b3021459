"""The exit codes of every tuimon process (the CLI, the session daemon), in one place so that a
script reads the same number from either. Imports nothing."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# The session could not be recorded (disk full, file too large, I/O error): not the model's
# fault (1) nor bad input (2); a script may want to retry elsewhere.
EXIT_STORE = 3
# tuimon compare --fail-if-slower: no variant got slower beyond noise, but the sessions could not
# have seen such a slowdown either (their intervals reach past the threshold): neither pass nor fail.
EXIT_CANNOT_TELL = 4
