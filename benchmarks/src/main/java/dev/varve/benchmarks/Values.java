package dev.varve.benchmarks;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Value bytes that are a pure function of a key id, so a reader can verify a value without keeping a copy. */
final class Values {
    private Values() {
    }

    /** Fills {@code dst} with the bytes of value {@code id}. */
    static void fill(byte[] dst, long id) {
        long state = id * 0x9E3779B97F4A7C15L;
        for (int i = 0; i < dst.length; i += Long.BYTES) {
            long word = mix(state += 0x9E3779B97F4A7C15L);
            for (int j = 0; j < Long.BYTES && i + j < dst.length; j++) dst[i + j] = (byte) (word >>> (8 * j));
        }
    }

    static byte[] of(long id, int length) {
        byte[] v = new byte[length];
        fill(v, id);
        return v;
    }

    static boolean matches(byte[] actual, long id, int length) {
        return actual != null && actual.length == length && Arrays.equals(actual, of(id, length));
    }

    /** {@code count} random values of {@code minBytes..maxBytes} bytes (both inclusive), for loads that need variety but no verification. */
    static byte[][] pool(int count, int minBytes, int maxBytes, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[][] pool = new byte[count][];
        for (int i = 0; i < count; i++) pool[i] = of(rnd.nextLong(), rnd.nextInt(minBytes, maxBytes + 1));
        return pool;
    }

    /** SplitMix64's finaliser. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
