package dev.varve.cli;

import picocli.CommandLine.Option;

/** A key range [--from, --to) for scan and dump; an absent bound is open. */
final class RangeOptions {
    @Option(names = "--from", paramLabel = "K", description = "First key (inclusive), in --encoding.")
    String from;

    @Option(names = "--to", paramLabel = "K", description = "End key (exclusive), in --encoding.")
    String to;

    byte[] lo(Encoding e) {
        return from == null ? null : e.decode(from);
    }

    /** The end key; refused when it sorts before the first key (an empty range is more likely a mistake than meant). */
    byte[] hi(Encoding e) {
        byte[] hi = to == null ? null : e.decode(to);
        byte[] lo = lo(e);
        if (lo != null && hi != null && java.util.Arrays.compareUnsigned(lo, hi) > 0)
            throw new IllegalArgumentException("--from " + from + " sorts after --to " + to + " (keys compare as unsigned bytes)");
        return hi;
    }
}
