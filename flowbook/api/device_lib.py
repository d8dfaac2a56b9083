"""TF1's ``tensorflow.python.client.device_lib``: the devices this process can run on.

``list_local_devices()`` answers what scripts ask of it (``d.name``,
``d.device_type``, ``d.memory_limit``...) from flowbook's own device list:
the CPU, then the GPUs CuPy finds (or a registered simulated one).  TensorBoard
ships no ``DeviceAttributes`` message, so :class:`DeviceAttributes` is a small
class with that message's fields, printed in its text form.  Each device's
``incarnation`` is a random 64-bit number drawn once per process, as TF draws
one per device at start-up.

    >>> [d.name for d in list_local_devices()][:1]
    ['/device:CPU:0']
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from flowbook.framework import devices

__all__ = ["DeviceAttributes", "list_local_devices"]

_CPU_MEMORY = 268435456  # what TF reports for its CPU device (256 MiB)
_INCARNATIONS: dict[str, int] = {}


@dataclass
class DeviceAttributes:
    """One device, with the fields of TF's ``DeviceAttributes`` message.

    >>> DeviceAttributes("/device:CPU:0", "CPU", 1, 2).device_type
    'CPU'
    """

    name: str
    device_type: str
    memory_limit: int
    incarnation: int
    physical_device_desc: str = ""

    def __str__(self) -> str:
        lines = [f'name: "{self.name}"', f'device_type: "{self.device_type}"']
        lines.append(f"memory_limit: {self.memory_limit}")
        lines += ["locality {", "}", f"incarnation: {self.incarnation}"]
        if self.physical_device_desc:
            lines.append(f'physical_device_desc: "{self.physical_device_desc}"')
        return "\n".join(lines) + "\n"

    __repr__ = __str__


def _attributes(device: devices.Device) -> DeviceAttributes:
    incarnation = _INCARNATIONS.setdefault(device.name, secrets.randbits(63))
    if device.device_type == "CPU":
        return DeviceAttributes(device.name, "CPU", _CPU_MEMORY, incarnation)
    desc = f"device: {device.index}, name: {device.description}"
    return DeviceAttributes(
        device.name, device.device_type, device.memory_limit_bytes, incarnation, desc
    )


def list_local_devices(session_config: Any = None) -> list[DeviceAttributes]:
    """The devices a session with ``session_config`` (a ConfigProto) may use, CPU first."""
    return [_attributes(d) for d in devices.local_devices(session_config)]
