package dev.varve.core.io;

/**
 * Seeds for randomized tests, Aeron {@code RandomWatcher} style: {@code -Dvarve.seed=N} repeats a run, and a
 * failure names the seed it ran with.
 */
public final class Seeds {
    /** A block of test code that may throw anything. */
    @FunctionalInterface
    public interface Body {
        void run() throws Throwable;
    }

    private Seeds() {
    }

    /** {@code -Dvarve.seed} when given, else a fresh seed. */
    public static long base() {
        return Long.getLong("varve.seed", System.nanoTime());
    }

    /** SplitMix64's finaliser: nearby seeds give unrelated streams ({@code java.util.Random} of nearby seeds starts alike). */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Runs {@code body}; any failure is rethrown wrapped in an error that names {@code seed}. */
    public static void run(String what, long seed, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            AssertionError e = new AssertionError(what + " failed with seed " + seed + " (rerun with -Dvarve.seed=" + seed + "): " + t, t);
            System.err.println(e.getMessage());
            throw e;
        }
    }
}
