#!/usr/bin/python3
"""NumPy goldens for weft::np's breadth: every elementwise function, predicate and reduction on
several dtypes, broadcasting shapes, empty arrays, NaN and infinities. Computed by NumPy alone
(Debian's python3-numpy); weft is not called.

  make_np_breadth_goldens.py OUT_DIR

writes, per case, <case>.in0.npy [, .in1.npy, ...] and <case>.out.npy (a function with two
results: .out0.npy and .out1.npy). A case is named <function>__<variant>; weft/np/np_breadth_test.cc
computes each with the weft::np function of that name and compares dtype, shape and values.
"""
import os
import sys

import warnings

import numpy as np

RNG = np.random.default_rng(20261126)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0])


def uniform(lo, hi, shape=(3, 4)):
    return RNG.uniform(lo, hi, shape)


def ints(lo, hi, shape=(3, 4), dtype=np.int32):
    return RNG.integers(lo, hi, shape).astype(dtype)


# name: (numpy function, domain (lo, hi), accepts integers, accepts float16)
UNARY = {
    "abs": (np.abs, (-5, 5), True, True),
    "absolute": (np.absolute, (-5, 5), True, True),
    "fabs": (np.fabs, (-5, 5), True, True),
    "negative": (np.negative, (-5, 5), True, True),
    "positive": (np.positive, (-5, 5), True, True),
    "sign": (np.sign, (-5, 5), True, True),
    "sqrt": (np.sqrt, (0, 5), True, True),
    "square": (np.square, (-5, 5), True, True),
    "cbrt": (np.cbrt, (-5, 5), True, True),
    "reciprocal": (np.reciprocal, (0.5, 3), True, True),
    "exp": (np.exp, (-3, 3), True, True),
    "exp2": (np.exp2, (-3, 3), True, True),
    "expm1": (np.expm1, (-3, 3), True, True),
    "log": (np.log, (0.1, 5), True, True),
    "log2": (np.log2, (0.1, 5), True, True),
    "log10": (np.log10, (0.1, 5), True, True),
    "log1p": (np.log1p, (-0.9, 5), True, True),
    "sin": (np.sin, (-4, 4), True, True),
    "cos": (np.cos, (-4, 4), True, True),
    "tan": (np.tan, (-1.2, 1.2), True, True),
    "arcsin": (np.arcsin, (-0.95, 0.95), False, True),
    "arccos": (np.arccos, (-0.95, 0.95), False, True),
    "arctan": (np.arctan, (-5, 5), True, True),
    "sinh": (np.sinh, (-3, 3), True, True),
    "cosh": (np.cosh, (-3, 3), True, True),
    "tanh": (np.tanh, (-3, 3), True, True),
    "arcsinh": (np.arcsinh, (-5, 5), True, True),
    "arccosh": (np.arccosh, (1.05, 5), True, True),
    "arctanh": (np.arctanh, (-0.95, 0.95), False, True),
    "deg2rad": (np.deg2rad, (-360, 360), True, True),
    "rad2deg": (np.rad2deg, (-7, 7), True, True),
    "sinc": (np.sinc, (-3, 3), False, True),
    "floor": (np.floor, (-5, 5), True, True),
    "ceil": (np.ceil, (-5, 5), True, True),
    "fix": (np.fix, (-5, 5), True, True),
    "round": (np.round, (-5, 5), True, True),
    "around": (np.around, (-5, 5), True, True),
    "isnan": (np.isnan, (-5, 5), True, True),
    "isinf": (np.isinf, (-5, 5), True, True),
    "isfinite": (np.isfinite, (-5, 5), True, True),
    "isneginf": (np.isneginf, (-5, 5), True, False),
    "isposinf": (np.isposinf, (-5, 5), True, False),
    "signbit": (np.signbit, (-5, 5), True, True),
    "logical_not": (np.logical_not, (-2, 2), True, True),
}

# name: (numpy function, domain of a, domain of b, accepts integers, accepts floats)
BINARY = {
    "add": (np.add, (-5, 5), (-5, 5), True, True),
    "subtract": (np.subtract, (-5, 5), (-5, 5), True, True),
    "multiply": (np.multiply, (-5, 5), (-5, 5), True, True),
    "divide": (np.divide, (-5, 5), (0.5, 3), True, True),
    "true_divide": (np.true_divide, (-5, 5), (0.5, 3), True, True),
    "power": (np.power, (0.5, 3), (-2, 3), False, True),
    "float_power": (np.float_power, (0.5, 3), (-2, 3), True, True),
    "maximum": (np.maximum, (-5, 5), (-5, 5), True, True),
    "minimum": (np.minimum, (-5, 5), (-5, 5), True, True),
    "floor_divide": (np.floor_divide, (-9, 9), (-4, 4), True, True),
    "mod": (np.mod, (-9, 9), (-4, 4), True, True),
    "remainder": (np.remainder, (-9, 9), (-4, 4), True, True),
    "arctan2": (np.arctan2, (-5, 5), (-5, 5), True, True),
    "hypot": (np.hypot, (-5, 5), (-5, 5), True, True),
    "logaddexp": (np.logaddexp, (-5, 5), (-5, 5), True, True),
    "logaddexp2": (np.logaddexp2, (-5, 5), (-5, 5), True, True),
    "heaviside": (np.heaviside, (-2, 2), (0, 1), True, True),
    "nextafter": (np.nextafter, (-5, 5), (-5, 5), True, True),
    "gcd": (np.gcd, (-30, 30), (-30, 30), True, False),
    "lcm": (np.lcm, (-12, 12), (-12, 12), True, False),
    "bitwise_and": (np.bitwise_and, (-30, 30), (-30, 30), True, False),
    "bitwise_or": (np.bitwise_or, (-30, 30), (-30, 30), True, False),
    "bitwise_xor": (np.bitwise_xor, (-30, 30), (-30, 30), True, False),
    "equal": (np.equal, (-2, 2), (-2, 2), True, True),
    "not_equal": (np.not_equal, (-2, 2), (-2, 2), True, True),
    "less": (np.less, (-2, 2), (-2, 2), True, True),
    "less_equal": (np.less_equal, (-2, 2), (-2, 2), True, True),
    "greater": (np.greater, (-2, 2), (-2, 2), True, True),
    "greater_equal": (np.greater_equal, (-2, 2), (-2, 2), True, True),
    "logical_and": (np.logical_and, (-1, 2), (-1, 2), True, True),
    "logical_or": (np.logical_or, (-1, 2), (-1, 2), True, True),
    "logical_xor": (np.logical_xor, (-1, 2), (-1, 2), True, True),
    "isclose": (np.isclose, (-1, 1), (-1, 1), True, True),
}

# name: numpy function of (a, axis) — every reduction is run with axis None, 0 and -1 (keepdims
# variants in the test's own table).
REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "var": np.var, "std": np.std,
    "max": np.max, "min": np.min, "amax": np.amax, "amin": np.amin, "ptp": np.ptp,
    "all": np.all, "any": np.any, "count_nonzero": np.count_nonzero, "nansum": np.nansum,
    "nanprod": np.nanprod, "nanmean": np.nanmean, "average": np.average, "argmax": np.argmax,
    "argmin": np.argmin, "cumsum": np.cumsum, "cumprod": np.cumprod,
}


def unary_cases(out):
    for name, (fn, (lo, hi), takes_ints, takes_f16) in UNARY.items():
        x = uniform(lo, hi)
        if name in ("round", "around", "floor", "ceil", "fix"):
            x = np.round(x * 2) / 2  # halves, where rounding modes differ
        out[f"{name}__f64"] = ([x], fn)
        out[f"{name}__f32"] = ([x.astype(np.float32)], fn)
        if takes_f16:
            out[f"{name}__f16"] = ([x.astype(np.float16)], fn)
        if takes_ints:
            lo_i, hi_i = int(np.ceil(lo)), int(np.floor(hi)) + 1
            if name == "reciprocal":
                lo_i, hi_i = 1, 4
            out[f"{name}__i32"] = ([ints(lo_i, max(hi_i, lo_i + 1))], fn)
            out[f"{name}__i64"] = ([ints(lo_i, max(hi_i, lo_i + 1), dtype=np.int64)], fn)
        out[f"{name}__empty"] = ([np.zeros((0, 3))], fn)
        out[f"{name}__special"] = ([SPECIAL.copy()], fn)
    out["round__decimals2"] = ([uniform(-5, 5) * 100], lambda a: np.round(a, 2))
    out["around__decimals_neg1"] = ([ints(-100, 100)], lambda a: np.around(a, -1))
    out["around__decimals_neg1_f64"] = ([uniform(-100, 100)], lambda a: np.around(a, -1))
    out["logical_not__bool"] = ([uniform(-1, 1) > 0], np.logical_not)
    out["bitwise_not__i32"] = ([ints(-30, 30)], np.bitwise_not)
    out["bitwise_not__i64"] = ([ints(-30, 30, dtype=np.int64)], np.bitwise_not)
    out["bitwise_not__bool"] = ([uniform(-1, 1) > 0], np.bitwise_not)
    out["bitwise_not__empty"] = ([np.zeros((0, 2), np.int32)], np.bitwise_not)


def binary_cases(out):
    for name, (fn, (alo, ahi), (blo, bhi), takes_ints, takes_floats) in BINARY.items():
        if takes_floats:
            a, b = uniform(alo, ahi, (3, 1)), uniform(blo, bhi, (4,))
            if name in ("floor_divide", "mod", "remainder", "heaviside"):
                a, b = np.round(a * 2) / 2, np.round(b * 2) / 2
                if name != "heaviside":
                    b[b == 0] = 1.5
            if name == "isclose":
                b = a.reshape(-1)[0] + RNG.choice([0, 1e-9, 1e-6, 1e-3], 4)
            out[f"{name}__bcast"] = ([a, b], fn)
            out[f"{name}__f32"] = ([a.astype(np.float32), b.astype(np.float32)], fn)
            out[f"{name}__f32_f64"] = ([a.astype(np.float32), b], fn)
            out[f"{name}__special"] = ([SPECIAL.reshape(-1, 1), SPECIAL.copy()], fn)
            out[f"{name}__empty"] = ([np.zeros((0, 1)), np.ones((3,))], fn)
        if takes_ints:
            a = ints(alo, ahi + 1, (3, 1))
            b = ints(blo, bhi + 1, (4,))
            if name in ("floor_divide", "mod", "remainder"):
                b[b == 0] = 3
                b[0] = 0  # integer division by zero gives 0, as NumPy
            out[f"{name}__i32"] = ([a, b], fn)
            out[f"{name}__i64_i32"] = ([a.astype(np.int64), b], fn)
            if not takes_floats:
                out[f"{name}__empty"] = ([np.zeros((0, 1), np.int32), np.ones((3,), np.int32)], fn)
        if name.startswith(("bitwise", "logical")):
            out[f"{name}__bool"] = ([uniform(-1, 1, (3, 1)) > 0, uniform(-1, 1, (4,)) > 0], fn)
    with np.errstate(all="ignore"):
        out["divmod__bcast"] = ([np.round(uniform(-9, 9, (3, 1)) * 2) / 2, np.array([-2.5, -1, 1.5, 4])],
                                np.divmod)
        out["divmod__i64"] = ([ints(-9, 10, (3, 1), np.int64), np.array([-3, -1, 2, 4])], np.divmod)
    out["nextafter__f16"] = ([SPECIAL.astype(np.float16).reshape(-1, 1), SPECIAL.astype(np.float16)],
                             np.nextafter)
    out["nextafter__f16_tiny"] = ([np.array([0.0, 1.0, -1.0, 65504.0], np.float16),
                                   np.array([1.0, 0.0, -2.0, np.inf], np.float16)], np.nextafter)
    out["isclose__equal_nan"] = ([SPECIAL.reshape(-1, 1), SPECIAL.copy()],
                                 lambda a, b: np.isclose(a, b, equal_nan=True))
    out["isclose__tolerances"] = ([np.array([1.0, 1.1, 2.0]), np.array([1.05, 1.0, 2.5])],
                                  lambda a, b: np.isclose(a, b, rtol=0.1, atol=0.01))
    for name, fn in (("allclose", np.allclose), ("array_equal", np.array_equal)):
        x = uniform(-1, 1)
        out[f"{name}__same"] = ([x, x.copy()], fn)
        out[f"{name}__off"] = ([x, x + 1e-3], fn)
        out[f"{name}__bcast"] = ([x[:1], x], fn)
    out["array_equal__shapes_differ"] = ([np.zeros((2, 3)), np.zeros((3, 2))], np.array_equal)
    out["clip__f64"] = ([uniform(-3, 3)], lambda a: np.clip(a, -1, 1.5))
    out["clip__i32_weak_scalars"] = ([ints(-5, 6)], lambda a: np.clip(a, -1, 2))
    out["add__i32_weak_int"] = ([ints(-5, 6)], lambda a: np.add(a, 1))
    out["add__i32_weak_float"] = ([ints(-5, 6)], lambda a: np.add(a, 0.5))
    out["multiply__f32_weak_float"] = ([uniform(-1, 1).astype(np.float32)], lambda a: np.multiply(a, 0.5))
    out["power__weak_base"] = ([uniform(-2, 2)], lambda a: np.power(2, a))
    out["add__bool_weak_bool"] = ([uniform(-1, 1) > 0], lambda a: np.add(a, True))
    out["add__i32_weak_bool"] = ([ints(-5, 6)], lambda a: np.add(a, True))
    out["add__i32_weak_big_int"] = ([ints(-5, 6)], lambda a: np.add(a, 3000000000))
    out["gcd__int_min"] = ([np.array([-2**31, -2**31, 12], np.int32), np.array([0, 6, -18], np.int32)],
                           np.gcd)
    out["lcm__negative"] = ([np.array([-4, 6, 0], np.int64), np.array([6, -4, 5], np.int64)], np.lcm)
    out["where__weak_scalars"] = ([uniform(-1, 1)], lambda a: np.where(a > 0, a, 0))


def reduction_cases(out):
    x = uniform(-3, 3, (3, 4))
    with_nan = x.copy()
    with_nan[0, 1] = with_nan[2, 3] = np.nan
    for name, fn in REDUCTIONS.items():
        axes = {"none": None, "axis0": 0, "axis_neg1": -1}
        for tag, axis in axes.items():
            out[f"{name}__{tag}"] = ([x], lambda a, fn=fn, axis=axis: fn(a, axis=axis))
        out[f"{name}__f32_axis1"] = ([x.astype(np.float32)], lambda a, fn=fn: fn(a, axis=1))
        out[f"{name}__i32_axis0"] = ([ints(-3, 4)], lambda a, fn=fn: fn(a, axis=0))
        out[f"{name}__nan_axis1"] = ([with_nan], lambda a, fn=fn: fn(a, axis=1))
        if name not in ("max", "min", "amax", "amin", "ptp", "argmax", "argmin"):
            out[f"{name}__empty_axis0"] = ([np.zeros((0, 3))], lambda a, fn=fn: fn(a, axis=0))
    keep = lambda fn: (lambda a: fn(a, axis=(0, 2), keepdims=True))
    for name in ("sum", "prod", "mean", "max", "min", "all", "any", "nansum", "nanmean", "ptp"):
        out[f"{name}__axes02_keepdims"] = ([uniform(-2, 2, (2, 3, 4))], keep(REDUCTIONS[name]))
    out["var__ddof1_axis0"] = ([x], lambda a: np.var(a, axis=0, ddof=1))
    out["std__ddof1_none"] = ([x], lambda a: np.std(a, ddof=1))
    out["all__bool_axis1"] = ([x > -2.5], lambda a: np.all(a, axis=1))
    out["any__bool_axis0"] = ([x > 2.5], lambda a: np.any(a, axis=0))
    out["average__weights_1d"] = ([x, uniform(0.5, 2, (4,))],
                                  lambda a, w: np.average(a, axis=1, weights=w))
    out["average__weights_full"] = ([x, uniform(0.5, 2, (3, 4))],
                                    lambda a, w: np.average(a, weights=w))
    out["var__ddof_too_big_none"] = ([np.array([1.0, 2.0])], lambda a: np.var(a, ddof=3))
    out["cumsum__wraps_none"] = ([np.array([2**62, 2**62, 2**62], np.int64)], np.cumsum)
    out["cumsum__bool_axis1"] = ([x > 0], lambda a: np.cumsum(a, axis=1))
    out["cumprod__zeros_axis1"] = ([np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 2.0]])],
                             lambda a: np.cumprod(a, axis=1))
    for n, axis in ((1, -1), (2, 1), (1, 0)):
        out[f"diff__n{n}_axis{axis}"] = ([uniform(-3, 3, (4, 5))],
                                         lambda a, n=n, axis=axis: np.diff(a, n=n, axis=axis))
    out["diff__i32"] = ([ints(-9, 9)], lambda a: np.diff(a))
    out["diff__bool"] = ([x > 0], lambda a: np.diff(a))
    out["diff__special"] = ([SPECIAL.copy()], lambda a: np.diff(a))


def cases():
    out = {}
    unary_cases(out)
    binary_cases(out)
    reduction_cases(out)
    return out


def main(out_dir):
    warnings.filterwarnings("ignore")
    os.makedirs(out_dir, exist_ok=True)
    with np.errstate(all="ignore"):
        for name, (ins, fn) in cases().items():
            for i, a in enumerate(ins):
                np.save(os.path.join(out_dir, f"{name}.in{i}.npy"), a)
            result = fn(*ins)
            if isinstance(result, tuple):
                for i, r in enumerate(result):
                    np.save(os.path.join(out_dir, f"{name}.out{i}.npy"), np.asarray(r))
            else:
                np.save(os.path.join(out_dir, f"{name}.out.npy"), np.asarray(result))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
