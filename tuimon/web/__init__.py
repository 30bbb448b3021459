"""``tuimon serve``'s browser side: an aiohttp server (server.py) hands each browser tab a viewer
process of its own (tab.py) through textual-serve's app service, on a page of ours (page.py)
that loads only what the server itself serves."""
