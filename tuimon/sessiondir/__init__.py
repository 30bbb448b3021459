"""The session directory, the floor both houses stand on: ``store`` writes and reads one,
``merge`` reads several nodes' directories of one torchrun job as one, ``listing`` finds the
sessions under --out and their state. Nothing here computes an answer or starts a process."""
