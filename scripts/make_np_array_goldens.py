#!/usr/bin/python3
"""NumPy goldens for weft::np's array functions: creation, shape, indexing helpers, sorting,
products (einsum on 26 subscript strings) and dtype helpers. Computed by NumPy alone (Debian's
python3-numpy); weft is not called.

  make_np_array_goldens.py OUT_DIR

writes, per case, <case>.in0.npy [, .in1.npy, ...] and <case>.out.npy (or .out0.npy, .out1.npy,
... for a list of results). weft/np/np_array_test.cc holds the same case names, each with the
weft::np call that should reproduce NumPy's result.
"""
import os
import sys
import warnings

import numpy as np

RNG = np.random.default_rng(20261127)


def r(*shape):
    return RNG.standard_normal(shape)


def ints(lo, hi, shape, dtype=np.int64):
    return RNG.integers(lo, hi, shape).astype(dtype)


def cases():
    a234, a34, v5 = r(2, 3, 4), r(3, 4), r(5)
    i34 = ints(-5, 5, (3, 4), np.int32)
    nan_row = np.array([3.0, np.nan, -1.0, np.inf, -np.inf, 0.0, 2.0, -0.0, 1.0, np.nan])
    ties = np.array([2, 1, 2, 0, 1, 2, 0], np.int64)
    out = {
        # creation
        "identity": ([], lambda: np.identity(3)),
        "empty_like": ([i34], lambda a: np.zeros_like(a)),  # weft's empty is zero-filled
        "copy": ([a34], np.copy),
        "ascontiguousarray_scalar": ([np.array(2.5)], np.ascontiguousarray),
        "logspace": ([], lambda: np.logspace(0, 3, 7)),
        "logspace_base2": ([], lambda: np.logspace(1, 4, 4, endpoint=False, base=2.0)),
        "geomspace": ([], lambda: np.geomspace(1, 1000, 4)),
        "geomspace_negative": ([], lambda: np.geomspace(-2, -32, 5)),
        "tri": ([], lambda: np.tri(3, 5, 1)),
        "tril": ([a234], lambda a: np.tril(a)),
        "tril_k_neg1": ([a34], lambda a: np.tril(a, -1)),
        "triu_k1": ([a34], lambda a: np.triu(a, 1)),
        "triu_int": ([i34], lambda a: np.triu(a)),
        "meshgrid_xy": ([np.arange(3.0), np.arange(4.0) * 10], lambda x, y: np.meshgrid(x, y)),
        "meshgrid_ij": ([np.arange(3.0), np.arange(4.0) * 10],
                        lambda x, y: np.meshgrid(x, y, indexing="ij")),
        "vander": ([v5], np.vander),
        "vander_increasing_n3": ([np.arange(1, 5)], lambda x: np.vander(x, 3, increasing=True)),
        "diag_from_1d": ([v5], np.diag),
        "diag_from_1d_k2": ([v5], lambda v: np.diag(v, 2)),
        "diag_from_1d_k_neg1": ([v5], lambda v: np.diag(v, -1)),
        "diag_of_2d_k1": ([a34], lambda a: np.diag(a, 1)),
        "diagflat": ([r(2, 2)], lambda v: np.diagflat(v, -1)),
        "diag_nan_inf": ([np.array([1.0, np.nan, np.inf])], np.diag),
        "diag_bool": ([np.array([True, False, True])], lambda v: np.diag(v, 1)),
        "diag_indices": ([], lambda: np.diag_indices(3, 3)),
        "ix_": ([np.array([0, 2]), np.array([1, 2, 3])], lambda a, b: np.ix_(a, b)),
        "ix_bool": ([np.array([True, False, True]), np.array([1, 3])], lambda a, b: np.ix_(a, b)),
        # shape
        "ravel": ([a234], np.ravel),
        "expand_dims": ([a34], lambda a: np.expand_dims(a, -1)),
        "squeeze_all": ([r(1, 3, 1)], np.squeeze),
        "squeeze_axis": ([r(1, 3, 1)], lambda a: np.squeeze(a, 2)),
        "broadcast_to": ([r(3, 1)], lambda a: np.broadcast_to(a, (2, 3, 4))),
        "broadcast_arrays": ([r(3, 1), r(4)], lambda a, b: np.broadcast_arrays(a, b)),
        "atleast_1d": ([np.array(1.5)], np.atleast_1d),
        "atleast_2d": ([v5], np.atleast_2d),
        "atleast_3d_1d": ([v5], np.atleast_3d),
        "atleast_3d_2d": ([a34], np.atleast_3d),
        "swapaxes": ([a234], lambda a: np.swapaxes(a, 0, 2)),
        "moveaxis": ([a234], lambda a: np.moveaxis(a, 0, -1)),
        "moveaxis_many": ([r(2, 3, 4, 5)], lambda a: np.moveaxis(a, [0, 1], [-1, -2])),
        "flip_all": ([a234], np.flip),
        "flip_axis1": ([a234], lambda a: np.flip(a, 1)),
        "flip_axes": ([a234], lambda a: np.flip(a, (0, 2))),
        "fliplr": ([a34], np.fliplr),
        "flipud": ([a34], np.flipud),
        "roll_flat": ([a34], lambda a: np.roll(a, 5)),
        "roll_axis": ([a34], lambda a: np.roll(a, -1, axis=1)),
        "roll_axes": ([a34], lambda a: np.roll(a, 2, axis=(0, 1))),
        "rot90": ([a34], np.rot90),
        "rot90_k2": ([a34], lambda a: np.rot90(a, 2)),
        "rot90_k3_axes": ([a234], lambda a: np.rot90(a, 3, axes=(1, 2))),
        "rot90_k_neg1": ([a34], lambda a: np.rot90(a, -1)),
        "tile": ([a34], lambda a: np.tile(a, (2, 1))),
        "tile_more_reps": ([v5], lambda a: np.tile(a, (2, 1, 3))),
        "repeat_flat": ([a34], lambda a: np.repeat(a, 2)),
        "repeat_axis": ([a34], lambda a: np.repeat(a, 3, axis=1)),
        "repeat_counts": ([a34], lambda a: np.repeat(a, [1, 0, 2], axis=0)),
        "append_flat": ([a34, v5], np.append),
        "append_axis": ([a34, r(1, 4)], lambda a, b: np.append(a, b, axis=0)),
        "hstack_1d": ([v5, r(3)], lambda a, b: np.hstack([a, b])),
        "hstack_2d": ([a34, r(3, 2)], lambda a, b: np.hstack([a, b])),
        "vstack": ([v5, r(2, 5)], lambda a, b: np.vstack([a, b])),
        "dstack": ([a34, a34], lambda a, b: np.dstack([a, b])),
        "split_sections": ([r(6, 2)], lambda a: np.split(a, 3)),
        "split_indices": ([r(7, 2)], lambda a: np.split(a, [2, 5, 9])),
        "split_indices_axis1": ([r(2, 7)], lambda a: np.split(a, [3], axis=1)),
        "split_negative_index": ([np.arange(6.0)], lambda a: np.split(a, [-2])),
        "split_unsorted_indices": ([np.arange(6.0)], lambda a: np.split(a, [4, 2])),
        "hsplit": ([r(2, 6)], lambda a: np.hsplit(a, 2)),
        "vsplit": ([r(4, 3)], lambda a: np.vsplit(a, 2)),
        "dsplit": ([r(2, 2, 4)], lambda a: np.dsplit(a, 2)),
        "pad_constant": ([a34], lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=7)),
        "pad_edge": ([a34], lambda a: np.pad(a, ((2, 1), (3, 0)), mode="edge")),
        "pad_reflect": ([v5], lambda a: np.pad(a, ((3, 6),), mode="reflect")),
        "pad_symmetric": ([a34], lambda a: np.pad(a, ((2, 4), (1, 5)), mode="symmetric")),
        "pad_int_one_pair": ([i34], lambda a: np.pad(a, 1)),
        # indexing helpers
        "take_flat": ([a34, np.array([0, 5, -1])], lambda a, i: np.take(a, i)),
        "take_axis": ([a234, np.array([[2, 0], [1, 1]])], lambda a, i: np.take(a, i, axis=1)),
        "take_along_axis": ([a34, ints(0, 4, (3, 2))],
                            lambda a, i: np.take_along_axis(a, i, axis=1)),
        "take_along_axis_broadcast": ([a234, ints(-3, 3, (1, 5, 4))],
                                      lambda a, i: np.take_along_axis(a, i, axis=1)),
        "take_along_axis_argsort": ([a34], lambda a: np.take_along_axis(a, np.argsort(a, 0), 0)),
        "compress": ([np.array([True, False, True]), a34], lambda c, a: np.compress(c, a, axis=0)),
        "compress_flat": ([np.array([False, True, True]), a34], lambda c, a: np.compress(c, a)),
        "select": ([a34], lambda a: np.select([a < -0.5, a > 0.5], [a * 10, a - 100], 0)),
        "select_default": ([i34], lambda a: np.select([a > 2], [a], -1)),
        "nonzero": ([i34], np.nonzero),
        "nonzero_3d": ([a234 > 0.5], np.nonzero),
        "nonzero_empty": ([np.zeros((2, 0))], np.nonzero),
        "where_one_arg": ([a34 > 0], np.where),
        # sorting
        "sort": ([a34], np.sort),
        "sort_axis0": ([a34], lambda a: np.sort(a, 0)),
        "sort_flat": ([a34], lambda a: np.sort(a, axis=None)),
        "sort_nan": ([nan_row], np.sort),
        "sort_f32": ([r(6, 40).astype(np.float32)], np.sort),
        "sort_i32": ([ints(-1000, 1000, (4, 50), np.int32)], np.sort),
        "sort_i64": ([ints(-1000, 1000, (4, 50))], np.sort),
        "sort_empty": ([np.zeros((3, 0))], np.sort),
        "argsort": ([a34], np.argsort),
        "argsort_axis0": ([a34], lambda a: np.argsort(a, 0)),
        "argsort_stable_ties": ([ties], lambda a: np.argsort(a, kind="stable")),
        "argsort_stable_ties_f32": ([ties.astype(np.float32)], lambda a: np.argsort(a, kind="stable")),
        "argsort_stable_ties_f64": ([ties.astype(np.float64)], lambda a: np.argsort(a, kind="stable")),
        "argsort_nan": ([nan_row[nan_row == nan_row].tolist() + [np.nan]], lambda a: np.argsort(np.asarray(a), kind="stable")),
        # products
        "tensordot_2": ([a234, r(3, 4, 5)], lambda a, b: np.tensordot(a, b)),
        "tensordot_pairs": ([a234, r(4, 2, 5)], lambda a, b: np.tensordot(a, b, ([0, 2], [1, 0]))),
        "tensordot_0": ([v5, r(2)], lambda a, b: np.tensordot(a, b, 0)),
        "inner": ([a234, r(5, 4)], np.inner),
        "inner_scalar": ([np.array(2.0), a34], np.inner),
        "outer": ([a34, v5], np.outer),
        "vdot": ([a34, r(4, 3)], np.vdot),
        "cross3": ([r(4, 3), r(4, 3)], np.cross),
        "cross2": ([r(4, 2), r(4, 2)], np.cross),
        "cross_2_3": ([r(2), r(3)], np.cross),
        "kron": ([r(2, 3), r(3, 2)], np.kron),
        "kron_ranks": ([r(2), r(2, 3)], np.kron),
        "diagonal": ([a34], np.diagonal),
        "diagonal_offset": ([a34], lambda a: np.diagonal(a, 1)),
        "diagonal_axes": ([a234], lambda a: np.diagonal(a, -1, 2, 1)),
        "trace": ([a34], np.trace),
        "trace_3d": ([a234], lambda a: np.trace(a, 0, 1, 2)),
        "polyval": ([np.array([3.0, 0.0, -2.0, 1.0]), a34], np.polyval),
        "polyval_int": ([np.array([1, 2, 3]), np.array([0, 1, 2, 10])], np.polyval),
        # dtype helpers, as float64 arrays of the fields / bools
        "finfo_float32": ([], lambda: np.array([np.finfo(np.float32).eps, np.finfo(np.float32).max,
                                                np.finfo(np.float32).tiny, np.finfo(np.float32).bits])),
        "finfo_float16": ([], lambda: np.array([np.finfo(np.float16).eps, np.finfo(np.float16).max,
                                                np.finfo(np.float16).tiny, np.finfo(np.float16).bits])),
        "finfo_float64": ([], lambda: np.array([np.finfo(np.float64).eps, np.finfo(np.float64).max,
                                                np.finfo(np.float64).tiny, np.finfo(np.float64).bits])),
        # dtype rules: the result's dtype is the fact checked (empty arrays of that dtype)
        "result_type_i32_weak_int": ([], lambda: np.zeros(0, np.result_type(np.zeros(1, np.int32), 1))),
        "result_type_i32_weak_float": ([], lambda: np.zeros(0, np.result_type(np.zeros(1, np.int32), 1.5))),
        "result_type_f32_i64": ([], lambda: np.zeros(0, np.result_type(np.zeros(1, np.float32), np.zeros(1, np.int64)))),
        "result_type_f32_weak_float": ([], lambda: np.zeros(0, np.result_type(np.zeros(1, np.float32), 0.5))),
        "result_type_scalars": ([], lambda: np.zeros(0, np.result_type(1, 2.5))),
        "promote_types_f16_i32": ([], lambda: np.zeros(0, np.promote_types(np.float16, np.int32))),
        "promote_types_u8_i32": ([], lambda: np.zeros(0, np.promote_types(np.uint8, np.int32))),
        "issubdtype": ([], lambda: np.array([np.issubdtype(np.int32, np.integer),
                                             np.issubdtype(np.float32, np.floating),
                                             np.issubdtype(np.float32, np.integer),
                                             np.issubdtype(np.uint8, np.signedinteger),
                                             np.issubdtype(np.bool_, np.number),
                                             np.issubdtype(np.int64, np.number),
                                             np.issubdtype(np.float64, np.float64),
                                             np.issubdtype(np.float64, np.float32)])),
    }
    # The shape and order functions on every dtype they take, empty arrays and NaN: <fn>__<kind>.
    sweep = {
        "ravel": np.ravel, "flip": np.flip, "fliplr": np.fliplr, "flipud": np.flipud,
        "rot90": np.rot90, "swapaxes": lambda a: np.swapaxes(a, 0, 1),
        "moveaxis": lambda a: np.moveaxis(a, 0, -1), "roll": lambda a: np.roll(a, 1, axis=1),
        "tile": lambda a: np.tile(a, (1, 2)), "repeat": lambda a: np.repeat(a, 2, axis=0),
        "tril": np.tril, "triu": np.triu, "diagonal": np.diagonal, "trace": np.trace,
        "pad": lambda a: np.pad(a, 1), "sort": np.sort, "argsort": lambda a: np.argsort(a, kind="stable"),
        "atleast_3d": np.atleast_3d, "append": lambda a: np.append(a, a, axis=0),
        "hstack": lambda a: np.hstack([a, a]), "vstack": lambda a: np.vstack([a, a]),
        "expand_dims": lambda a: np.expand_dims(a, 1), "take": lambda a: np.take(a, [0, -1], axis=1),
    }
    kinds = {
        "f32": r(3, 4).astype(np.float32), "i32": ints(-9, 9, (3, 4), np.int32),
        "i64": ints(-9, 9, (3, 4)), "bool": r(3, 4) > 0, "empty": np.zeros((0, 4)),
        "nan": np.where(r(3, 4) > 0.5, np.nan, r(3, 4)),
    }
    for fn_name, fn in sweep.items():
        for kind, arr in kinds.items():
            out[f"{fn_name}__{kind}"] = ([arr], fn)
    # einsum: 26 subscript strings (batch matmul, transposes, traces, diagonals, outer products,
    # ellipses, implicit outputs, repeated operands, three operands).
    x, y = r(3, 4), r(4, 5)
    b1, b2 = r(2, 3, 4), r(2, 4, 5)
    sq, sq3 = r(4, 4), r(2, 4, 4)
    einsums = [
        ("ij,jk->ik", [x, y]), ("ij,jk", [x, y]), ("bij,bjk->bik", [b1, b2]),
        ("ij->ji", [x]), ("ij", [x]), ("ji", [x]), ("ii->", [sq]), ("ii", [sq]), ("ii->i", [sq]),
        ("bii->bi", [sq3]), ("bii->b", [sq3]), ("i,j->ij", [r(3), r(4)]), ("i,i->", [r(5), r(5)]),
        ("i,i", [r(5), r(5)]), ("ij->", [x]), ("ij->j", [x]), ("...ij->...ji", [b1]),
        ("...ij,...jk->...ik", [b1, b2]), ("ij,...jk->...ik", [x, b1.transpose(0, 2, 1)]),
        ("bij,jk->bik", [b1, y]), ("ij,ij->ij", [x, x]), ("ij,ij->", [x, x]),
        ("ij,jk,kl->il", [x, y, r(5, 2)]), ("i,i,i->", [r(4), r(4), r(4)]),
        ("bn,anm,bm->ba", [r(2, 3), r(4, 3, 5), r(2, 5)]), ("iij->ij", [r(3, 3, 2)]),
        ("ab...,b->a...", [r(3, 4, 2), r(4)]), ("i,j,k->ijk", [r(2), r(3), r(2)]),
    ]
    for i, (spec, ops) in enumerate(einsums):
        out[f"einsum_{i:02d}"] = (ops, lambda *ops, spec=spec: np.einsum(spec, *ops))
    return out, [spec for spec, _ in einsums]


def main(out_dir):
    warnings.filterwarnings("ignore")
    os.makedirs(out_dir, exist_ok=True)
    table, specs = cases()
    with open(os.path.join(out_dir, "einsum_subscripts.txt"), "w") as f:
        f.write("\n".join(specs) + "\n")
    for name, (ins, fn) in table.items():
        for i, a in enumerate(ins):
            np.save(os.path.join(out_dir, f"{name}.in{i}.npy"), np.asarray(a))
        result = fn(*ins)
        if isinstance(result, (tuple, list)):
            for i, part in enumerate(result):
                np.save(os.path.join(out_dir, f"{name}.out{i}.npy"), np.asarray(part))
        else:
            np.save(os.path.join(out_dir, f"{name}.out.npy"), np.asarray(result))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
