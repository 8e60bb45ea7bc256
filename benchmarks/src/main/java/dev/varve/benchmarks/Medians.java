package dev.varve.benchmarks;

import java.util.Arrays;

/** The median the jobs report over rows or runs of one setting. */
final class Medians {
    private Medians() {
    }

    /** The middle of {@code values}, the mean of the two middle ones for an even count; NaN when there are none. */
    static double of(double[] values) {
        if (values.length == 0) return Double.NaN;
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
