#!/usr/bin/python3
"""NumPy goldens for weft::np::at: the examples of NumPy's indexing guide (basic slicing,
newaxis and ellipsis, integer arrays, boolean masks, combined indexing, assignment), computed by
NumPy alone. weft/np/np_indexing_test.cc makes the same selections with np::at.

  make_np_indexing_goldens.py OUT_DIR     writes <case>.out.npy for each case
"""
import os
import sys

import numpy as np


def cases():
    x10 = np.arange(10)
    x25 = np.arange(10).reshape(2, 5)
    x231 = np.array([[[1], [2], [3]], [[4], [5], [6]]])
    x_desc = np.arange(10, 1, -1)
    y = np.arange(35).reshape(5, 7)
    x32 = np.array([[1, 2], [3, 4], [5, 6]])
    x43 = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]])
    xnan = np.array([[1., 2.], [np.nan, 3.], [np.nan, np.nan]])
    x4 = np.array([1., -1., -2., 3])
    x32b = np.array([[0, 1], [1, 1], [2, 2]])
    x235 = np.arange(30).reshape(2, 3, 5)
    x234 = np.arange(24).reshape(2, 3, 4)
    a34 = np.arange(12).reshape(3, 4)
    b = y > 20

    def added(a, idx, v):
        a = a.copy()
        np.add.at(a, idx, v)
        return a

    def assigned(a, idx, v):
        a = a.copy()
        a[idx] = v
        return a

    return {
        # basic slicing and indexing
        "int": x10[2], "int_negative": x10[-2], "slice": x10[2:5], "slice_stop_negative": x10[:-7],
        "slice_step": x10[1:7:2], "two_ints": x25[1, 3], "two_ints_negative": x25[1, -1],
        "row": x25[0], "slice_negative_start": x10[-2:10], "slice_negative_step": x10[-3:3:-1],
        "slice_open_stop": x10[5:], "slice_3d": x231[1:2], "ellipsis_int": x231[..., 0],
        "newaxis": x231[:, np.newaxis, :, :], "newaxis_outer_sum": x10[:5, np.newaxis] + x10[np.newaxis, :5],
        "column": x43[:, 0], "reverse_all": x43[::-1, ::-1],
        # integer arrays
        "array_1d": x_desc[np.array([3, 3, 1, 8])], "array_negative": x_desc[np.array([3, 3, -3, 8])],
        "array_2d": x_desc[np.array([[1, 1], [2, 3]])],
        "two_arrays": y[np.array([0, 2, 4]), np.array([0, 1, 2])],
        "array_and_int": y[np.array([0, 2, 4]), 1], "array_rows": y[np.array([0, 2, 4])],
        "pairs": x32[[0, 1, 2], [0, 1, 0]],
        "corner_arrays": x43[np.array([[0, 0], [3, 3]]), np.array([[0, 2], [0, 2]])],
        "broadcast_arrays": x43[np.array([0, 3])[:, np.newaxis], np.array([0, 2])],
        # boolean masks
        "mask_not_nan": xnan[~np.isnan(xnan)], "mask_negative": x4[x4 < 0],
        "mask_column": y[b[:, 5]], "mask_rows_slice": x32b[x32b.sum(-1) <= 2, :],
        "mask_2d_of_3d": x235[np.array([[True, True, False], [False, True, True]])],
        "mask_all": y[b],
        # combined
        "array_then_slice": y[np.array([0, 2, 4]), 1:3], "slices": x43[1:2, 1:3],
        "slice_then_list": x43[1:2, [1, 2]], "mask_then_slice": y[b[:, 5], 1:3],
        "separated_arrays": x234[[0, 1], :, [0, 2]], "adjacent_arrays": x234[:, [0, 1], [1, 2]],
        "ellipsis_array": x234[..., [1, 2]],
        "empty_ellipsis_separates": x234[:, [0, 1], ..., [0, 1]], "newaxis_and_array": x234[np.newaxis, [1, 0], ..., 1],
        "ix_mask": a34[np.ix_(np.array([True, False, True]), np.array([0, 2]))],
        # assignment (functional: a copy comes back)
        "set_slice": assigned(x10, slice(2, 7), 1),
        "set_mask": assigned(x4, x4 < 0, 0.0),
        "set_array_values": assigned(x43, (np.array([0, 3]), np.array([1, 2])), np.array([-1, -2])),
        "set_row_broadcast": assigned(x43, 1, np.array([7, 8, 9])),
        "add_mask": added(x4, x4 < 0, 20.0),
        "add_repeated": added(x10, np.array([1, 1, 3, 1]), 1),
    }


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, result in cases().items():
        np.save(os.path.join(out_dir, f"{name}.out.npy"), np.asarray(result))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
