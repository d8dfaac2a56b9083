"""A stand-in for a widget's front end: what the live-graph tests attach to a LiveGraph."""

from __future__ import annotations

import json


class FakeView:
    """Records what a LiveGraph pushes (each state through JSON, as a widget receives it)."""

    def __init__(self) -> None:
        self.got: list[dict] = []

    def push(self, state: dict) -> None:
        self.got.append(json.loads(json.dumps(state)))  # every state must be JSON-able as is

    def last(self, key: str) -> dict:
        return next(s[key] for s in reversed(self.got) if key in s)

    def runs(self) -> list[dict]:
        return [s["run"] for s in self.got if "run" in s]
