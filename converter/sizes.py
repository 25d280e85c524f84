"""Byte counts for people."""


def human_size(size: int) -> str:
    """Bytes in binary units: 312 B, 300.2 KiB, 1.4 GiB."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
