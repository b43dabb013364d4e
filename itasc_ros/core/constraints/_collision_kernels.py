"""Compiled kernels of the collision constraint (numba, cached on disk; no allocation)."""

from __future__ import annotations

import math

from numba import njit

from ..kinematics._kernels import jacobian_full, model_arrays, select_columns


@njit(cache=True, nogil=True)
def shape_poses(poses, link_idx, origins, centers, rot, pos, cw):
    """World poses and bounding-sphere centres of the link shapes.

    Args:
        poses: (n_links, 4, 4) link poses in the root frame.
        link_idx: (s,) link of each shape (-1: an obstacle, already in the root frame).
        origins: (s, 4, 4) shape poses in their link frame.
        centers: (s, 3) bounding-sphere centres in the link frame.
        rot: (s, 3, 3) output rotations.
        pos: (s, 3) output positions [m].
        cw: (s, 3) output bounding-sphere centres in the root frame [m].
    """
    for k in range(link_idx.shape[0]):
        li = link_idx[k]
        if li < 0:
            continue
        for i in range(3):
            for j in range(3):
                s = 0.0
                for t in range(3):
                    s += poses[li, i, t] * origins[k, t, j]
                rot[k, i, j] = s
            s = poses[li, i, 3]
            c = poses[li, i, 3]
            for t in range(3):
                s += poses[li, i, t] * origins[k, t, 3]
                c += poses[li, i, t] * centers[k, t]
            pos[k, i] = s
            cw[k, i] = c


@njit(cache=True, nogil=True)
def sphere_bounds(pairs, cw, radius, out):
    """Lower bounds (p,) of each pair's distance from its bounding spheres [m]."""
    for r in range(pairs.shape[0]):
        a, b = pairs[r, 0], pairs[r, 1]
        d0 = cw[a, 0] - cw[b, 0]
        d1 = cw[a, 1] - cw[b, 1]
        d2 = cw[a, 2] - cw[b, 2]
        out[r] = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - radius[a] - radius[b]


@njit(cache=True, nogil=True)
def _moved(cw, rot, radius, k, last_c, last_r, r, side):
    """Upper bound of how far any point of shape k moved since pair r's last query [m].

    A point at offset u (|u| <= radius) from the bounding-sphere centre moved by
    ``dc + (R - R_last) u``; the largest singular value of ``R - R_last`` is
    ``||R - R_last||_F / sqrt(2)`` (two equal ones, ``2 sin(angle / 2)``, and zero).
    """
    dc = 0.0
    for i in range(3):
        t = cw[k, i] - last_c[r, side, i]
        dc += t * t
    dr = 0.0
    for i in range(3):
        for j in range(3):
            t = rot[k, i, j] - last_r[r, side, i, j]
            dr += t * t
    return math.sqrt(dc) + radius[k] * math.sqrt(0.5 * dr)


@njit(cache=True, nogil=True)
def plan_queries(
    pairs, cw, rot, radius, link_idx, reach, dist, queried, todo, need, shapes,
    exact, known, last_c, last_r,
):  # fmt: skip
    """The pairs that may be within ``reach`` [m], and the shapes they move.

    Two lower bounds of a pair's distance, the larger kept: the bounding spheres', and the
    distance of the pair's last query minus how far each shape has moved since (temporal
    coherence: a pair far beyond ``reach`` is queried again only once the motion since its
    last query could have brought it there). Writes the bound into ``dist`` (p,), ``queried``
    (p,) True for the pairs to query, their indices into ``todo`` (p,), and into ``shapes``
    (s,) the link shapes (``link_idx`` >= 0) of those pairs, each once (``need`` (s,) work
    array). ``exact`` (p,), ``known`` (p,), ``last_c`` (p, 2, 3) and ``last_r`` (p, 2, 3, 3)
    keep each pair's last queried distance [m] and the shapes' centres and rotations then;
    the distances queried after the previous call are read from ``dist`` on entry.

    Returns:
        (number of pairs to query, number of shapes to place).
    """
    for k in range(need.shape[0]):
        need[k] = False
    n = 0
    ns = 0
    for r in range(pairs.shape[0]):
        a, b = pairs[r, 0], pairs[r, 1]
        if queried[r]:  # queried since the last call: dist holds its exact distance
            exact[r] = dist[r]
            known[r] = True
        d0 = cw[a, 0] - cw[b, 0]
        d1 = cw[a, 1] - cw[b, 1]
        d2 = cw[a, 2] - cw[b, 2]
        bound = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) - radius[a] - radius[b]
        if known[r] and bound <= reach:
            since = exact[r] - _moved(cw, rot, radius, a, last_c, last_r, r, 0)
            since -= _moved(cw, rot, radius, b, last_c, last_r, r, 1)
            bound = max(bound, since)
        dist[r] = bound
        queried[r] = bound <= reach
        if not queried[r]:
            continue
        for i in range(3):
            last_c[r, 0, i] = cw[a, i]
            last_c[r, 1, i] = cw[b, i]
            for j in range(3):
                last_r[r, 0, i, j] = rot[a, i, j]
                last_r[r, 1, i, j] = rot[b, i, j]
        todo[n] = r
        n += 1
        for k in (a, b):
            if link_idx[k] >= 0 and not need[k]:
                need[k] = True
                shapes[ns] = k
                ns += 1
    return n, ns


@njit(cache=True, nogil=True)
def closest_rows(dist, k, out):
    """Indices of the ``k`` smallest entries of ``dist`` (p,), ascending index order, in out."""
    p = dist.shape[0]
    n = 0
    while n < k:
        best = -1
        for i in range(p):
            taken = False
            for t in range(n):
                if out[t] == i:
                    taken = True
                    break
            if not taken and (best < 0 or dist[i] < dist[best]):
                best = i
        out[n] = best
        n += 1
    # insertion sort by pair index: a pair keeps its row while it stays among the k closest
    for i in range(1, k):
        v = out[i]
        j = i - 1
        while j >= 0 and out[j] > v:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = v


@njit(cache=True, nogil=True)
def distance_row(ja, jb, has_b, normal, out):
    """``out = -normal^T (Jv_a - Jv_b)``: the rate of the distance (normal from a to b).

    Args:
        ja: (6, n) Jacobian of the nearest point of a (linear rows 0-2, root frame).
        jb: (6, n) likewise for b.
        has_b: False when shape b is a static obstacle (its points do not move).
        normal: (3,) unit normal from shape a to shape b.
        out: (n,) the row of A.
    """
    n = out.shape[0]
    for j in range(n):
        s = 0.0
        for t in range(3):
            v = ja[t, j]
            if has_b:
                v -= jb[t, j]
            s -= normal[t] * v
        out[j] = s


@njit(cache=True, nogil=True)
def ramp(d, margin, activation):
    """Smoothstep weight factor: 0 at ``margin + activation`` and beyond, 1 at the margin."""
    t = (margin + activation - d) / activation
    if t <= 0.0:
        return 0.0
    if t >= 1.0:
        return 1.0
    return t * t * (3.0 - 2.0 * t)


@njit(cache=True, nogil=True)
def collision_rows(
    ints, floats, poses, sel, jfull, ja, jb,
    row_pair, queried, dist, pa, pb, normal, pair_links, has_b,
    margin, activation, buffer, gain, weight, normal_from_points, a, y, ydot, wy, active,
):  # fmt: skip
    """The rows of the collision constraint (see ``collision.py``), one per entry of row_pair.

    Args:
        ints: the tree's model, its int buffer (``KinematicTree.kernel_arrays``).
        floats: its float buffer.
        poses: the tree's link poses (n_links, 4, 4).
        sel: (n,) the tree's active joints' columns.
        jfull: (6, n_full) work array.
        ja: (6, n) work array.
        jb: (6, n) work array.
        row_pair: (m,) pair of each row.
        queried: (p,) whether a pair's distance was queried (else dist is a lower bound).
        dist: (p,) distances [m].
        pa: (p, 3) nearest points on a [m].
        pb: (p, 3) nearest points on b [m].
        normal: (p, 3) unit normals from a to b; written here as (pb - pa) / d for the rows
            whose |d| is above ``normal_from_points`` (p_b - p_a = d n, penetrating or not).
        pair_links: (p, 2) link of a and b (-1: an obstacle).
        has_b: (p,) whether b moves with a link.
        margin: [m].
        activation: activation distance [m].
        buffer: [m].
        gain: [1/s].
        weight: weight at the margin.
        normal_from_points: [m].
        a: (m, n) output rows of A.
        y: (m,) output distances [m].
        ydot: (m,) output desired rates [m/s].
        wy: (m,) output weights.
        active: (m,) output: the row acts.
    """
    _, _, jtype, axis, qidx, mult, _, chain, chain_len, _, _ = model_arrays(ints, floats)
    for r in range(row_pair.shape[0]):
        pr = row_pair[r]
        d = dist[pr]
        y[r] = d
        w = ramp(d, margin, activation) if queried[pr] else 0.0
        active[r] = w > 0.0
        if w <= 0.0:  # beyond the activation distance: no nearest points were read
            a[r, :] = 0.0
            ydot[r] = 0.0
            wy[r] = 0.0
            continue
        jacobian_full(
            poses, pair_links[pr, 0], chain, chain_len, jtype, axis, qidx, mult, pa[pr], jfull
        )
        select_columns(jfull, sel, ja)
        if has_b[pr]:
            jacobian_full(
                poses, pair_links[pr, 1], chain, chain_len, jtype, axis, qidx, mult, pb[pr], jfull
            )
            select_columns(jfull, sel, jb)
        if d > normal_from_points or d < -normal_from_points:
            for t in range(3):
                normal[pr, t] = (pb[pr, t] - pa[pr, t]) / d
        distance_row(ja, jb, has_b[pr], normal[pr], a[r])
        ydot[r] = gain * (margin + buffer - d)
        wy[r] = weight * w
