package dev.varve.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * A standby kept by follow mode ({@code backup --follow}): an ordinary store directory plus {@value #SNAPSHOT_MAP},
 * which maps the sender's snapshot ids to the standby's own. Open the standby with {@code Varve.open} for the latest
 * state it holds, or {@code asOf(Standby.localSnapshot(dir, id).getAsLong())} for the sender's snapshot {@code id}.
 *
 * <p>The map ({@link StandbyMapDescriptor}) holds one checksummed line per snapshot the standby keeps (its retention
 * policy may drop some: {@link SnapshotBackup#retention}), appended and fsynced <em>after</em> the standby declared the
 * local snapshot and made the declaration durable, and rewritten whole without the lines of dropped ones once it holds
 * 4,096 lines and twice what it held after its last rewrite. A line may name a local snapshot dropped since (its
 * {@code asOf} then says so), never a wrong one, even once the standby, opened as a store, declares snapshots of its
 * own; after a kill -9 or a power loss the standby's latest snapshot may have no line (it is then found as its
 * latest).
 */
public final class Standby {
    /** The snapshot map's file name in the standby directory. */
    public static final String SNAPSHOT_MAP = "followed-snapshots.map";

    private Standby() {
    }

    /**
     * The standby's snapshot standing for the sender's snapshot {@code senderSnapshot}, if the standby received it.
     *
     * @throws dev.varve.core.io.CorruptionException if the map is damaged (a line that fails its checksum, anywhere
     *                                               but at the end a crash may have torn), naming it and the offset
     */
    public static OptionalLong localSnapshot(Path standbyDir, long senderSnapshot) {
        Long local = read(standbyDir).get(senderSnapshot);
        return local == null ? OptionalLong.empty() : OptionalLong.of(local);
    }

    /** The whole map, sender id to local id; empty when the directory is not a standby. Damage as {@link #localSnapshot}. */
    public static Map<Long, Long> snapshots(Path standbyDir) {
        return read(standbyDir);
    }

    private static Map<Long, Long> read(Path dir) {
        if (dir == null) throw new IllegalArgumentException("standbyDir must not be null");
        Path file = dir.resolve(SNAPSHOT_MAP);
        if (!Files.exists(file)) return new TreeMap<>();
        try {
            return StandbyMapDescriptor.decode(Files.readAllBytes(file), file);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }
}
