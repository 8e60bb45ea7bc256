package dev.varve.benchmarks;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;

/** Value bytes that are a pure function of a key id, so a reader can verify a value without keeping a copy. */
final class Values {
    static final int WORDS = 256;

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

    /**
     * {@code count} text-like values of {@code minBytes..maxBytes} bytes (both inclusive): words drawn at random from
     * a {@value #WORDS}-word vocabulary with a random 16-byte id in front, so a page of them compresses the way
     * records of real applications do (a few times, not 100x), unlike {@link #of}'s random bytes, which do not
     * compress at all.
     */
    static byte[][] textPool(int count, int minBytes, int maxBytes, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        String[] vocabulary = new String[WORDS];
        for (int w = 0; w < WORDS; w++) {
            StringBuilder word = new StringBuilder();
            for (int c = rnd.nextInt(3, 10); c > 0; c--) word.append((char) ('a' + rnd.nextInt(26)));
            vocabulary[w] = word.toString();
        }
        byte[][] pool = new byte[count][];
        for (int i = 0; i < count; i++) {
            byte[] v = new byte[rnd.nextInt(minBytes, maxBytes + 1)];
            fill(v, rnd.nextLong()); // the random head stays; words overwrite the rest
            for (int at = 16; at < v.length; ) {
                byte[] word = (vocabulary[rnd.nextInt(WORDS)] + ' ').getBytes(StandardCharsets.US_ASCII);
                int n = Math.min(word.length, v.length - at);
                System.arraycopy(word, 0, v, at, n);
                at += n;
            }
            pool[i] = v;
        }
        return pool;
    }

    /** SplitMix64's finaliser. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
