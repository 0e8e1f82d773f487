"""numpy's ``power``, ``log`` and ``log10`` as at its baseline SIMD level, on every CPU
(:mod:`goodput_sim.models.libm`): the same bits as numpy in a process with its run-time SIMD
levels turned off. (On a CPU without AVX-512 numpy computes them so anyway.)"""

from __future__ import annotations

import numpy as np
from machine import without_simd

from goodput_sim.models import libm

SAMPLES = (  # exact arithmetic only: the samples must not depend on the SIMD level
    "import numpy as np\n"
    "rng = np.random.default_rng(11)\n"
    "base = np.ldexp(rng.uniform(0.5, 1.0, 4000), rng.integers(-40, 40, 4000))\n"
    "exponent = np.concatenate([rng.uniform(-4, 4, 3990), [2.0, 0.5, -1.0, 0.0, 1.0] * 2])\n"
    "singles = np.ldexp(rng.uniform(0.5, 1.0, 4000), rng.integers(-30, 30, 4000))\n"
    "singles = singles.astype(np.float32)\n"
)


def test_power_log10_and_scalar_powers_are_numpys_at_its_baseline():
    namespace: dict = {}
    exec(SAMPLES, namespace)  # noqa: S102 - the same samples here and in the baseline process
    base, exponent, singles = namespace["base"], namespace["exponent"], namespace["singles"]
    got = {
        "power": libm.power(base, exponent).tobytes().hex(),
        "power of one base": libm.power(np.full(1, 10.0), exponent[:, None]).tobytes().hex(),
        "log10 single": libm.log10(singles).tobytes().hex(),
        "log": libm.log(base).tobytes().hex(),
        "power by scalars": [libm.power(base, e).tobytes().hex() for e in (2.0, 0.5, -1.0, 1.7)],
        "scalar powers": np.array(
            [libm.scalar_power(base[i], e) for i in range(50) for e in (2.0, 0.5, -1.0, 1.7)]
        )
        .tobytes()
        .hex(),
    }
    assert libm.log10(singles).dtype == np.float32
    want = without_simd(
        "import json\n" + SAMPLES + "print(json.dumps({\n"
        "  'power': np.power(base, exponent).tobytes().hex(),\n"
        "  'power of one base': np.power(np.full(1, 10.0), exponent[:, None]).tobytes().hex(),\n"
        "  'log10 single': np.log10(singles).tobytes().hex(),\n"
        "  'log': np.log(base).tobytes().hex(),\n"
        "  'power by scalars': [np.power(base, e).tobytes().hex()\n"
        "                       for e in (2.0, 0.5, -1.0, 1.7)],\n"
        "  'scalar powers': np.array([np.power(base[i:i + 1], e)[0] for i in range(50)\n"
        "                             for e in (2.0, 0.5, -1.0, 1.7)]).tobytes().hex()}))\n"
    )
    assert got == want


def network_times() -> dict[str, list[str]]:
    """Each bundled profile's network seconds at shapes inside and outside its measurements."""
    from goodput_sim.profiles import bundled_profiles_path, load_profiles

    shapes = [(n, r) for n in (1, 2, 3, 5) for r in (2, 3, 6, 12, 24, 40) if r >= n]
    return {
        name: [float(profile.network_time(n, r)).hex() for n, r in shapes]
        for name, profile in load_profiles(bundled_profiles_path()).items()
    }


def test_profiles_interpolate_network_times_alike_on_every_cpu():
    """A parametric profile interpolates its network times in log space (``log``, then
    ``exp``) with the C library's functions: its true step times, which every job's
    observations read, are those of numpy at its baseline. (On AVX-512 numpy's own rounded
    differently, and sia's first Philly week ended 0.06% apart.)"""
    program = "import json\nfrom test_libm import network_times as n\nprint(json.dumps(n()))\n"
    assert network_times() == without_simd(program)
