package dev.varve.benchmarks;

import dev.varve.engine.Table;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Point-get latency through one table, get by get: the same random keys are read once untimed (JIT, and whatever a
 * view builds on first use), then once with {@link System#nanoTime()} around each get; every value of the timed pass is
 * checked afterwards, so a wrong or missing value fails the job instead of making a fast figure.
 */
final class GetLatency {
    /** Median and 99th percentile of one timed pass, microseconds. */
    record Micros(double median, double p99) {
        String cell() {
            return String.format("%.2f / %.1f", median, p99);
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

    GetLatency(int gets, int keySpace, long seed) {
        if (gets < 1) throw new IllegalArgumentException("gets must be >= 1, was " + gets);
        keyIds = new SplittableRandom(seed).ints(gets, 0, keySpace).toArray();
        keys = Arrays.stream(keyIds).mapToObj(Keys::of).toArray(byte[][]::new);
        got = new byte[gets][];
        nanos = new long[gets];
    }

    Micros time(Table t, Expected expected, String what) throws DemoJob.MismatchException {
        for (byte[] k : keys) t.get(k);
        for (int i = 0; i < keys.length; i++) {
            long start = System.nanoTime();
            got[i] = t.get(keys[i]);
            nanos[i] = System.nanoTime() - start;
        }
        for (int i = 0; i < keys.length; i++) {
            if (!expected.matches(got[i], keyIds[i]))
                throw new DemoJob.MismatchException(what + ": key " + keyIds[i] + " read " + (got[i] == null ? "nothing" : "another value")
                        + " than the one it held then");
        }
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return new Micros(sorted[sorted.length / 2] / 1e3, sorted[(int) Math.min(sorted.length - 1L, sorted.length * 99L / 100)] / 1e3);
    }
}
