"""Small helpers the Python bench tools share: a percentile and the machine's load average."""


def pct(v, p):
    """The `p` quantile (0..1) of the values `v`, nearest rank."""
    v = sorted(v)
    return v[round((len(v) - 1) * p)]


def loadavg():
    """The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
