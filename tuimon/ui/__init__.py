"""The Textual TUI: a viewer of a session's event stream, live or recorded. Never imports torch."""
