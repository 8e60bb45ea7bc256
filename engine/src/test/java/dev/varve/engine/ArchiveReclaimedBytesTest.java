package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code metrics().archiveBytesReclaimed()} against the files reclamation deletes: every byte that leaves the rank
 * levels' directories is counted, the ranked extent a re-ranked snapshot no longer reads included (it went uncounted,
 * so the archive shrank by more than the figure said was given back).
 */
@Timeout(120)
class ArchiveReclaimedBytesTest {
    private static final int WINDOW = 3;
    @TempDir
    Path dir;

    /** The files of the rank levels' directories (volumes, Maplogs, ranked extents) and their sizes. */
    private static Map<Path, Long> levelFiles(Path archive) throws IOException {
        Map<Path, Long> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(archive)) {
            for (Path f : (Iterable<Path>) s.filter(Files::isRegularFile)::iterator) {
                Path rel = archive.relativize(f);
                if (rel.getNameCount() == 2 && rel.getName(0).toString().startsWith("level-")) out.put(rel, Files.size(f));
            }
        }
        return out;
    }

    @Test
    void reclaimedBytesCountEveryFileReclamationDeletesRankedExtentsIncluded() throws Exception {
        VarveConfig config = SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().checkpointFrequency(Duration.ofHours(1))
                .archiveSegmentSize(256L << 10).snapshotPageWindow(WINDOW)
                .retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(4), Retention.keepAll())).build();
        Path archive = config.archivePath();
        try (Varve store = Varve.open(config)) {
            VarveMetrics m = store.metrics();
            DeterministicReplayTestSupport.workload(store, 0, 28);
            store.snapshotNow(2);
            DeterministicReplayTestSupport.workload(store, 28, 30);
            long v = store.snapshotNow(1);
            DeterministicReplayTestSupport.workload(store, 30, 60); // level 1 holds the pre-states v needs
            store.rank(v, 2);
            for (int i = 0; i <= WINDOW; i++) {
                DeterministicReplayTestSupport.workload(store, 60 + 2L * i, 62 + 2L * i);
                store.snapshotNow(1);
            }
            store.checkpoint().join(); // v left the window: copied into a level-2 extent
            Path extent = Path.of("level-2", "extent-" + v + ".dat");
            Map<Path, Long> before = levelFiles(archive);
            assertTrue(before.containsKey(extent), "v was copied into level 2: " + before.keySet());
            long reclaimedBefore = m.archiveBytesReclaimed();

            // nothing written from here on (the archive is still): raised again, v leaves the window and is copied
            // into level 3, and its level-2 extent, which no one reads any more, is deleted
            store.rank(v, 3);
            for (int i = 0; i <= WINDOW + 1; i++) {
                store.snapshotNow(1);
                store.checkpoint().join();
            }
            Map<Path, Long> after = levelFiles(archive);
            assertFalse(after.containsKey(extent), "v's level-2 extent was deleted: " + after.keySet());
            long gone = 0;
            for (Map.Entry<Path, Long> e : before.entrySet()) {
                if (!after.containsKey(e.getKey())) gone += e.getValue();
            }
            assertEquals(gone, m.archiveBytesReclaimed() - reclaimedBefore,
                    "bytes reclaimed vs the files deleted (" + before.get(extent) + " bytes of them the level-2 extent)");
        }
    }
}
