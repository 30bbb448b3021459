"""A script session's files, from its events (``file_written``, ``files``, ``files_changed``):
what each run wrote in its own directory, the writes that could not be kept apart (an absolute
path outside the working directory; *not kept apart* when two runs or more wrote it), and what
changed in the user's directories during the session. Pure: events in, a dict out."""

from __future__ import annotations

from tuimon import events

TYPES = frozenset({events.FILE_WRITTEN, events.FILES, events.FILES_CHANGED})


class FilesFold:
    def __init__(self) -> None:
        self.outputs: dict[str, dict] = {}  # run -> its files event
        self.outside: dict[str, dict] = {}  # path -> {"runs": [...], "existed": first writer's word}
        self.changed: dict | None = None

    def add(self, e: dict) -> None:
        kind, run = e["type"], e.get("run")
        if kind == events.FILES and run is not None:
            self.outputs[run] = e
        elif kind == events.FILE_WRITTEN and run is not None and e.get("path"):
            seen = self.outside.setdefault(e["path"], {"runs": [], "existed": bool(e.get("existed")),
                                                       "t": e.get("t", 0.0)})
            if e.get("t", 0.0) < seen["t"]:  # the first writer says whether it was there before
                seen["existed"], seen["t"] = bool(e.get("existed")), e["t"]
            if run not in seen["runs"]:
                seen["runs"].append(run)
        elif kind == events.FILES_CHANGED:
            self.changed = e

    def report(self, labels: dict[str, str]) -> dict | None:
        """None for a session without files kept apart (a recipe, --in-place)."""
        if not (self.outputs or self.outside or self.changed):
            return None
        outputs = [{"run": run, "label": labels.get(run, run), "dir": e.get("dir"),
                    "files": list(e.get("files") or []), "count": e.get("count", 0),
                    "bytes": e.get("bytes", 0), "partial": bool(e.get("partial"))}
                   for run, e in self.outputs.items()]
        outside = [{"path": path, "runs": [labels.get(r, r) for r in w["runs"]],
                    "existed": w["existed"], "shared": len(w["runs"]) > 1}
                   for path, w in sorted(self.outside.items())]
        changed = self.changed or {}
        return {"outputs": outputs, "outside": outside,
                "dirs": list(changed.get("dirs") or []), "watched": self.changed is not None,
                "changes": list(changed.get("changes") or []), "changed": changed.get("count", 0)}
