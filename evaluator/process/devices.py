"""Which GPU device nodes a box's view binds: the worker's own GPUs and the driver's control nodes, nothing else.

A worker is pinned to its GPUs by ``CUDA_VISIBLE_DEVICES`` (leaderboard/jobs/gpus.py, with ``CUDA_DEVICE_ORDER=
PCI_BUS_ID``), but that variable is the candidate's to rewrite: with every ``/dev/nvidiaN`` in its view a candidate
could open another worker's GPUs. So the view binds only the nodes of the judge's own device set, found from the
driver's own record of each GPU (``/proc/driver/nvidia/gpus/<bus id>/information``: its minor number, UUID and bus
location), and names them to CUDA by UUID, so CUDA finds them whatever it numbers the nodes it can open.

Where the device set cannot be mapped to nodes (no driver record, a MIG instance, an index out of range) every node is
bound and the sandbox notes say so: a view that cannot start CUDA would fail every job on that host.
"""

from __future__ import annotations

import os

CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
DRIVER_GPUS = "/proc/driver/nvidia/gpus"


def driver_gpus(root: str = DRIVER_GPUS) -> list[dict]:
    """Every GPU the driver knows, in PCI bus order (CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID): {"bus",
    "minor", "uuid"}."""
    found = []
    try:
        buses = sorted(os.listdir(root))
    except OSError:
        return []
    for bus in buses:
        record: dict[str, str | int | None] = {"bus": bus.lower(), "minor": None, "uuid": None}
        try:
            with open(os.path.join(root, bus, "information")) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key.strip() == "Device Minor":
                        record["minor"] = int(value.strip())
                    elif key.strip() == "GPU UUID":
                        record["uuid"] = value.strip()
        except (OSError, ValueError):
            continue
        if record["minor"] is not None:
            found.append(record)
    return found


def select(visible: str | None, gpus: list[dict], present: list[str]) -> tuple[list[str], str | None, str]:
    """(the /dev nodes to bind, the CUDA_VISIBLE_DEVICES to set inside or None to leave it, a note) for the judge's
    ``visible`` device set (its CUDA_VISIBLE_DEVICES; None when unset), the driver's ``gpus`` (driver_gpus) and the
    names ``present`` under /dev."""
    control = [f"/dev/{n}" for n in CONTROL_NODES if n in present]
    every = sorted(f"/dev/{n}" for n in present if n.startswith("nvidia") and n[6:].isdigit())
    if visible is None:
        return control + every, None, "every GPU of the host (the judge is not pinned to a device set)"
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not entries:
        return control, None, "no GPU (the judge's device set is empty)"
    chosen = []
    for entry in entries:
        gpu = None
        if entry.isdigit() and int(entry) < len(gpus):
            gpu = gpus[int(entry)]
        elif entry.startswith("GPU-"):
            gpu = next((g for g in gpus if g["uuid"] and g["uuid"].startswith(entry)), None)
        if gpu is None or not gpu["uuid"] or f"nvidia{gpu['minor']}" not in present:
            return (
                control + every,
                None,
                f"every GPU of the host: the device set {visible!r} could not be mapped to device nodes",
            )
        chosen.append(gpu)
    nodes = [f"/dev/nvidia{g['minor']}" for g in chosen]
    return control + nodes, ",".join(g["uuid"] for g in chosen), "only the judge's GPUs: " + ", ".join(nodes)


def for_this_judge() -> tuple[list[str], str | None, str]:
    """select() for this judge process and host."""
    try:
        present = sorted(os.listdir("/dev"))
    except OSError:
        present = []
    if not any(n.startswith("nvidia") for n in present):
        return [], None, "no GPU device nodes on this host"
    return select(os.environ.get("CUDA_VISIBLE_DEVICES"), driver_gpus(), present)
