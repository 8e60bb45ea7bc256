package dev.varve.cli;

import dev.varve.config.ConfigValues;
import dev.varve.server.SnapshotBackup;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * {@code backup --from}'s bounds on a sender that stalls or trickles: the receiver's idle timeout and least receive
 * rate, for a slow link (looser) or a tighter watch. Taken as text and parsed here, in the syntax of the
 * {@code varve.*} properties, so that a refusal names the option rather than the Java setter.
 */
final class TransferLimits {
    @Option(names = "--idle-timeout", paramLabel = "DURATION",
            description = "With --from: give up when the sender sends nothing for this long, e.g. 30s, 5m or PT2M (default 60s).")
    String idleTimeout;

    @Option(names = "--min-receive-rate", paramLabel = "BYTES_PER_SECOND",
            description = "With --from: give up when the sender sends less than this a second over a window of twice the idle timeout, "
                    + "a byte count or with suffix k, m or g, e.g. 64k (default 1k; 0: no least rate).")
    String minReceiveRate;

    /** The options given, as the command line names them: both only mean something with --from. */
    List<String> given() {
        List<String> names = new ArrayList<>();
        if (idleTimeout != null) names.add("--idle-timeout");
        if (minReceiveRate != null) names.add("--min-receive-rate");
        return names;
    }

    /** Sets the given limits on {@code backup}; a value it refuses, or that does not parse, is refused naming its option. */
    void applyTo(SnapshotBackup backup) {
        if (idleTimeout != null) apply("--idle-timeout", idleTimeout, t -> backup.idleTimeout(ConfigValues.duration(t)));
        if (minReceiveRate != null) apply("--min-receive-rate", minReceiveRate, t -> backup.minReceiveRate(ConfigValues.size(t)));
    }

    private static void apply(String option, String text, Consumer<String> setter) {
        try {
            setter.accept(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(option + " " + text + " is refused: " + e.getMessage(), e);
        }
    }
}
