"""Parent side: supervisor, session store, statistics and export. Never imports torch."""
