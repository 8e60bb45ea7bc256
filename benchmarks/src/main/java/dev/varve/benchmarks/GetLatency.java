package dev.varve.benchmarks;

import dev.varve.engine.Table;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Point-get latency through one table, get by get: the same random keys are read twice with {@link System#nanoTime()}
 * around each get — the first pass pays for what a view builds and caches on first use, the second is the steady
 * state — and every value read is checked afterwards, so a wrong or missing value fails the job instead of making a
 * fast figure.
 */
final class GetLatency {
    /** Median and 99th percentile of the second pass, and of the first, microseconds. */
    record Micros(double median, double p99, double firstMedian, double firstP99) {
        String cell() {
            return String.format("%.2f / %.1f", median, p99);
        }

        String firstCell() {
            return String.format("%.2f / %.1f", firstMedian, firstP99);
        }
    }

    /** What a key should hold, and how to tell. */
    interface Expected {
        boolean matches(byte[] actual, int key);
    }

    private final int[] keyIds;
    private final byte[][] keys;
    private final byte[][] got;
    private final long[] nanos;
    private final long[] firstNanos;

    GetLatency(int gets, int keySpace, long seed) {
        if (gets < 1) throw new IllegalArgumentException("gets must be >= 1, was " + gets);
        keyIds = new SplittableRandom(seed).ints(gets, 0, keySpace).toArray();
        keys = Arrays.stream(keyIds).mapToObj(Keys::of).toArray(byte[][]::new);
        got = new byte[gets][];
        nanos = new long[gets];
        firstNanos = new long[gets];
    }

    Micros time(Table t, Expected expected, String what) throws DemoJob.MismatchException {
        pass(t, expected, what, firstNanos);
        pass(t, expected, what, nanos);
        return new Micros(median(nanos), p99(nanos), median(firstNanos), p99(firstNanos));
    }

    private void pass(Table t, Expected expected, String what, long[] into) throws DemoJob.MismatchException {
        for (int i = 0; i < keys.length; i++) {
            long start = System.nanoTime();
            got[i] = t.get(keys[i]);
            into[i] = System.nanoTime() - start;
        }
        for (int i = 0; i < keys.length; i++) {
            if (!expected.matches(got[i], keyIds[i]))
                throw new DemoJob.MismatchException(what + ": key " + keyIds[i] + " read " + (got[i] == null ? "nothing" : "another value")
                        + " than the one it held then");
        }
        Arrays.sort(into);
    }

    private static double median(long[] sorted) {
        return sorted[sorted.length / 2] / 1e3;
    }

    private static double p99(long[] sorted) {
        return sorted[(int) Math.min(sorted.length - 1L, sorted.length * 99L / 100)] / 1e3;
    }
}
