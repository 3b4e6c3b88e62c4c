"""Writes a synthetic DEM for benchmarks: smooth relief, small-scale texture,
noise and (with --pits) many closed depressions. Float32 GeoTIFF in UTM.
Usage: gen_dem.py OUT SIZE [--pits N] [--seed S]"""
import argparse

import numpy as np
from gen_dem_tiled import create_dem

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("size", type=int)
p.add_argument("--pits", type=int, default=0)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
n = a.size
rng = np.random.default_rng(a.seed)
ds, b = create_dem(a.out, n)
x = np.arange(n, dtype=np.float32)[None, :]
pits = rng.integers(0, n, (a.pits, 2)) if a.pits else np.zeros((0, 2), int)
radius = rng.integers(3, 25, a.pits) if a.pits else np.zeros(0, int)
step = 500
for r0 in range(0, n, step):
    y = np.arange(r0, min(n, r0 + step), dtype=np.float32)[:, None]
    z = 500 + 200 * np.sin(x / 700.0) * np.cos(y / 900.0) + 50 * np.sin(x / 61.0 + y / 47.0)
    z = z + rng.normal(0, 1.5, z.shape).astype(np.float32)
    sel = (pits[:, 0] >= r0 - 30) & (pits[:, 0] < r0 + step + 30)
    for (py, px), rad in zip(pits[sel], radius[sel]):
        ys = slice(max(r0, py - rad), min(r0 + z.shape[0], py + rad + 1))
        xs = slice(max(0, px - rad), min(n, px + rad + 1))
        if ys.start >= ys.stop or xs.start >= xs.stop:
            continue
        yy, xx = np.mgrid[ys, xs]
        d = np.hypot(yy - py, xx - px)
        z[ys.start - r0:ys.stop - r0, xs] -= 40.0 * np.clip(1 - d / rad, 0, None)
    b.WriteArray(z.astype(np.float32), 0, r0)
ds = None
