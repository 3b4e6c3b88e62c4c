"""Writes a synthetic Float32 DEM of any size without holding it in memory,
for the out-of-core benchmark (scripts/bench/outofcore): a tiled GeoTIFF
(512 x 512 blocks, BigTIFF when large) written one strip of whole blocks at
a time, each strip in column chunks, so that memory stays at a few chunks
whatever the size (about 400 MB peak RSS at 6000² and at 12000²; 0.3 us a
cell on the 2-core development machine, so 32000² takes about 5 minutes).

Every cell's value is a function of its row, column and the seed alone (no
random stream that depends on the order cells are made in), so the surface
is continuous across blocks and the same for any chunking:
  - relief: a few sine/cosine octaves (wavelengths 61 .. 2400 cells);
  - noise: +-1.5 m from an integer hash of (row, col, seed);
  - pits: one cone-shaped closed depression (radius 3..24, depth 15..60 m)
    in about 2 of every 3 cells of a 64-cell lattice, hashed per lattice cell,
    wholly inside its lattice cell so that no neighbour lattice cell is needed;
  - flats: in about 1 of every 4 cells of a 640-cell lattice a disc (radius
    20..200) set to one level, the smooth relief at its centre minus 8 m (a
    flat-floored closed depression; filled, a flat).
UTM zone 12N, 10 m cells, nodata -9999 (no nodata cells).
Usage: gen_dem_tiled.py OUT SIZE [--seed S]"""
import argparse

import numpy as np
from osgeo import gdal, osr

BLOCK = 512
CHUNK = 4096  # columns per piece of a strip: 512 x 4096 cells, 8 MiB as float32
PIT_CELL = 64
FLAT_CELL = 640

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def create_dem(path, n, options=None):
    """A new n x n Float32 GeoTIFF in UTM 12N with 10 m cells and nodata
    -9999 (gen_dem.py's too); returns the dataset and its band."""
    ds = gdal.GetDriverByName("GTiff").Create(path, n, n, 1, gdal.GDT_Float32, options or [])
    ds.SetGeoTransform([500000, 10, 0, 4500000, 0, -10])
    s = osr.SpatialReference()
    s.ImportFromEPSG(32612)
    ds.SetProjection(s.ExportToWkt())
    b = ds.GetRasterBand(1)
    b.SetNoDataValue(-9999)
    return ds, b


def hash64(seed, *keys):
    """splitmix64 of the seed and keys combined: deterministic, vectorised."""
    with np.errstate(over="ignore"):
        h = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        for k in keys:
            h = (h ^ np.asarray(k, dtype=np.uint64)) * np.uint64(0xBF58476D1CE4E5B9)
            h = h ^ (h >> np.uint64(31))
        h = (h + np.uint64(0x9E3779B97F4A7C15)) & M64
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def unit(h, shift):
    """16 bits of h from bit `shift` as a float in [0, 1)."""
    return ((h >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.float64) / 65536.0


def relief(y, x):
    return (500.0 + 200.0 * np.sin(x / 2400.0 + 0.3) * np.cos(y / 1900.0)
            + 60.0 * np.sin(x / 700.0) * np.cos(y / 900.0)
            + 25.0 * np.sin(x / 61.0 + y / 47.0)
            + 8.0 * np.cos(x / 23.0 - y / 31.0))


def lattice_feature(seed, y, x, cell, tag):
    """For each cell: its lattice cell's hash, centre (cy, cx) and distance to it."""
    ly, lx = y // cell, x // cell
    h = hash64(seed, ly, lx, np.uint64(tag))
    cy = ly * cell + cell // 2 + ((unit(h, 0) - 0.5) * (cell // 4)).astype(np.int64)
    cx = lx * cell + cell // 2 + ((unit(h, 16) - 0.5) * (cell // 4)).astype(np.int64)
    return h, cy, cx, np.hypot((y - cy).astype(np.float64), (x - cx).astype(np.float64))


def strip(seed, r0, rows, c0, cols):
    y = np.arange(r0, r0 + rows, dtype=np.int64)[:, None] + np.zeros((1, cols), np.int64)
    x = np.arange(c0, c0 + cols, dtype=np.int64)[None, :] + np.zeros((rows, 1), np.int64)
    z = relief(y.astype(np.float64), x.astype(np.float64))
    z += (unit(hash64(seed, y, x), 8) - 0.5) * 3.0
    # pits: radius 3..24 keeps the cone inside its lattice cell (centre within cell/8 of the middle)
    h, _, _, d = lattice_feature(seed, y, x, PIT_CELL, 1)
    rad = 3.0 + unit(h, 32) * 21.0
    depth = 15.0 + unit(h, 48) * 45.0
    on = (unit(h, 40) < 0.66) & (d < rad)
    z -= np.where(on, depth * (1.0 - d / rad), 0.0)
    # flats: discs radius 20..200 inside a 640-cell lattice cell
    h, cy, cx, d = lattice_feature(seed, y, x, FLAT_CELL, 2)
    rad = 20.0 + unit(h, 32) * 180.0
    on = (unit(h, 48) < 0.25) & (d < rad)
    level = relief(cy.astype(np.float64), cx.astype(np.float64)) - 8.0
    z = np.where(on, level, z)
    return z.astype(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("size", type=int)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    n = a.size
    gdal.SetCacheMax(64 << 20)
    ds, b = create_dem(a.out, n, ["TILED=YES", f"BLOCKXSIZE={BLOCK}", f"BLOCKYSIZE={BLOCK}", "BIGTIFF=IF_SAFER"])
    for r0 in range(0, n, BLOCK):
        rows = min(BLOCK, n - r0)
        for c0 in range(0, n, CHUNK):
            b.WriteArray(strip(a.seed, r0, rows, c0, min(CHUNK, n - c0)), c0, r0)
        b.FlushCache()
    ds = None


if __name__ == "__main__":
    main()
