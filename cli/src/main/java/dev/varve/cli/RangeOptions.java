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

    byte[] hi(Encoding e) {
        return to == null ? null : e.decode(to);
    }
}
