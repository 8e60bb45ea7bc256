package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A checkpoint's recovery files must have durable directory entries before its start marker gets its name. A rename
 * can reach the disk before the directory fsync that {@code atomicMove} runs after it, and a file created earlier
 * in that directory without an fsync of its own entry may not: a power cut there leaves a start marker without its
 * end marker and without its recovery file, which open refuses even with {@link OpenOption#TRUNCATE_DAMAGED_WAL}.
 * Found by a power-loss crash-state enumeration whose stricter model keeps any subset of a directory's un-fsynced
 * entry operations.
 */
@Timeout(120)
class RecoveryFileEntryDurableTest {
    @TempDir
    Path dir;

    /** Files created and not yet made durable by a directory-syncing call in their directory; violations found. */
    private static final class EntryWatch extends ForwardingFileIOFactory {
        final Set<Path> undurable = new HashSet<>();
        final List<String> violations = new ArrayList<>();
        int startMarkers;

        @Override
        public synchronized FileIO open(Path file, boolean create) throws IOException {
            boolean created = create && !Files.exists(file);
            FileIO f = super.open(file, create);
            if (created) undurable.add(file.toAbsolutePath().normalize());
            return f;
        }

        @Override
        public synchronized void atomicMove(Path from, Path to) throws IOException {
            Path target = to.toAbsolutePath().normalize();
            if (target.getFileName().toString().endsWith("-start.bin")) {
                startMarkers++;
                for (Path p : undurable) {
                    if (p.getParent().equals(target.getParent()) && p.getFileName().toString().contains("-recovery-")) {
                        violations.add(target.getFileName() + " named while " + p.getFileName() + " had no durable entry");
                    }
                }
            }
            super.atomicMove(from, to);
            // the rename's directory fsync made every entry of that directory durable
            undurable.remove(from.toAbsolutePath().normalize());
            undurable.removeIf(p -> p.getParent().equals(target.getParent()));
        }

        @Override
        public synchronized void delete(Path file) throws IOException {
            super.delete(file);
            undurable.remove(file.toAbsolutePath().normalize());
        }
    }

    @Test
    void recoveryFilesAreDurableBeforeTheStartMarkerIsNamed() {
        EntryWatch io = new EntryWatch();
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).partitions(2)
                .recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).walSyncMode(WalSyncMode.FSYNC)
                .checkpointFrequency(Duration.ofHours(1)).checkpointThreads(2)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(config, io)) {
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 50; i++) store.table("t").put(("k" + i).getBytes(), ("v" + round).getBytes());
                store.checkpoint().join();
            }
        }
        assertTrue(io.startMarkers >= 3, "checkpoints with recovery files ran: " + io.startMarkers);
        assertEquals(List.of(), io.violations);
        try (Varve store = Varve.open(config)) {
            assertEquals("v2", new String(store.table("t").get("k7".getBytes())));
        }
    }
}
