package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DirectoryFingerprint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A whole file or directory of a store that is missing: checksums cannot catch it, so open cross-checks what it
 * has (the archive's checkpoint marks name every rank level they recorded) and refuses, naming what was lost and
 * changing nothing.
 */
@Timeout(120)
class LostFileRefusalTest {
    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).partitions(2).retention(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepAll())).build();
    }

    /** A closed store with snapshots at both rank levels and a completed checkpoint after them. */
    private void storeWithTwoLevels() {
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 200; i++) t.put(utf8("k" + i), bytes(round * 1000L + i, 100));
                store.snapshotNow(round == 1 ? 2 : 1);
            }
            store.checkpoint().join();
            for (int i = 0; i < 200; i++) t.put(utf8("k" + i), bytes(7000L + i, 100)); // pre-states of both levels' snapshots
            store.checkpoint().join();
        }
    }

    private static void deleteTree(Path p) throws IOException {
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(x);
        }
    }

    @Test
    void aLostRankLevelDirectoryIsRefusedNamingItAndChangesNothing() throws IOException {
        for (int level : new int[]{2, 1}) {
            storeWithTwoLevels();
            Path lost = dir.resolve("archive").resolve("level-" + level);
            deleteTree(lost);
            Map<String, String> before = DirectoryFingerprint.of(dir);
            // before the fix: level 2 was made anew (an empty directory and Maplog files left behind by the refusal);
            // level 1 was refused as a skippyLevels setting to change
            CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config()).close());
            assertEquals(lost, e.file(), e.getMessage());
            assertTrue(e.getMessage().contains("directory is missing"), e.getMessage());
            assertEquals(before, DirectoryFingerprint.of(dir), "the refused open changed the store");
            CorruptionException ro = assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config()).close());
            assertEquals(lost, ro.file(), ro.getMessage());
            assertEquals(before, DirectoryFingerprint.of(dir));
            deleteTree(dir);
        }
    }

    @Test
    void verifyReportsALostOldestMaplogPartAsDamageNamingIt() throws IOException {
        VarveConfig config = FixtureSupport.small(dir).partitions(2).archiveSegmentSize(256L << 10).skippyNodeEntries(8)
                .retention(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepAll())).build();
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            for (int i = 0; i < 3000; i++) t.put(utf8("k" + i), bytes(i, 200));
            store.snapshotNow(2);
            store.checkpoint().join();
            for (int i = 0; i < 3000; i++) t.put(utf8("k" + i), bytes(9000L + i, 200)); // the pre-states of every page
            store.checkpoint().join();
        }
        Path level = dir.resolve("archive").resolve("level-2");
        Path oldest = level.resolve("maplog-L0.log");
        try (Stream<Path> s = Files.list(level)) {
            assertTrue(s.anyMatch(p -> p.getFileName().toString().startsWith("maplog-L0.log.")), "the level's Maplog has a later part");
        }
        Files.delete(oldest);
        // before the fix the verify itself failed with the CorruptionException instead of reporting it
        StoreVerifier.Report report = StoreVerifier.verify(config);
        assertTrue(report.damage().stream().anyMatch(d -> d.file().equals(oldest)), report.damage() + " / " + report.unusable());
    }
}
