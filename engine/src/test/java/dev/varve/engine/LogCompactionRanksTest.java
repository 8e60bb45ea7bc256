package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Multi-level retention with rank changes while the logs — the join log too — are compacted (from a black-box review
 * of the compaction): after a crash, reopened in the other recovery mode, the store holds exactly the snapshots and
 * ranks it held, each reading right, and again after more steps, a clean close and a read-only open.
 */
@Timeout(900)
class LogCompactionRanksTest {
    @TempDir
    Path tmp;

    static RankTreePolicy policy(String which) {
        return switch (which) {
            case "levels" -> RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3));
            case "levels3" -> RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(2), Retention.keepAll());
            default -> throw new IllegalArgumentException(which);
        };
    }

    static VarveConfig config(Path dir, String which, RecoveryMode mode) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(2).recoveryMode(mode)
                .checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).skippyNodeEntries(16)
                .archiveSegmentSize(256L << 10).snapshotPageWindow(2).retention(policy(which)).walSegmentSize(4L << 20).build();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static void steps(Varve s, long from, long to, String which) {
        for (long i = from; i <= to; i++) {
            long n = i;
            byte[] big = new byte[8];
            long id = s.writeAndSnapshot(b -> b.put("t", utf8("k" + (n % 40)), utf8("v" + n)).put("t", utf8("big" + (n % 500)), big), 1);
            assertEquals(i, id);
            if (i % 3 == 0) { // often enough that the join log is compacted too
                if (s.snapshots().stream().anyMatch(x -> x.id() == n - 1)) s.rank(n - 1, 2);
            }
            if (which.equals("levels3") && i % 97 == 0 && s.snapshots().stream().anyMatch(x -> x.id() == n - 2)) s.rank(n - 2, 3);
            if (i % 1000 == 0) s.checkpoint().join();
        }
    }

    static List<String> state(Varve s) {
        List<String> out = new ArrayList<>();
        for (SnapshotInfo i : s.snapshots()) {
            out.add(i.id() + "@" + i.rank());
            try (SnapshotView v = s.asOf(i.id())) {
                assertArrayEquals(utf8("v" + i.id()), v.table("t").get(utf8("k" + (i.id() % 40))), "snapshot " + i.id());
            }
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"levels", "levels3"})
    void ranksAndDropsAcrossCompactionCrashAndReopen(String which) {
        Path dir = tmp.resolve(which);
        List<String> before;
        Varve s = Varve.open(config(dir, which, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
        steps(s, 1, 9300, which);
        before = state(s);
        assertFalse(Files.exists(dir.resolve("archive").resolve("joins.log")), "the join log was compacted (renamed after its first entry held)");
        s.halt();
        try (Varve r = Varve.open(config(dir, which, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            List<String> after = state(r);
            assertEquals(before, after, "after crash");
            for (long id = 1; id <= 9300; id++) {
                final long x = id;
                if (r.snapshots().stream().noneMatch(i -> i.id() == x)) assertThrows(SnapshotNotFoundException.class, () -> r.asOf(x).close());
            }
            // every drop, newest first, as asOf tells it: those the drop log details and those below the horizon
            java.util.Set<Long> live = new java.util.HashSet<>();
            for (SnapshotInfo i : r.snapshots()) live.add(i.id());
            List<DroppedSnapshotInfo> gone = r.droppedSnapshots(Integer.MAX_VALUE);
            assertEquals(9300 - live.size(), gone.size());
            for (int k = 0; k < gone.size(); k++) {
                DroppedSnapshotInfo d = gone.get(k);
                assertEquals(9300 - k - live.stream().filter(id -> id > d.id()).count(), d.id(), "newest first, none left out");
                if (k % 97 == 0 || k == gone.size() - 1) {
                    String told = assertThrows(SnapshotNotFoundException.class, () -> r.asOf(d.id()).close()).getMessage();
                    assertTrue(told.endsWith(": " + d.why()), told + " / " + d.why());
                }
            }
            assertEquals(gone.subList(0, 10), r.droppedSnapshots(10));
            // snapshot 1's drop was compacted away: only a time by which it went is known, and the message says so
            String first = assertThrows(SnapshotNotFoundException.class, () -> r.asOf(1).close()).getMessage();
            assertTrue(first.contains("was dropped by the retention policy by ") && first.contains(" at the latest: when and why are no longer kept"), first);
            steps(r, 9301, 11000, which);
            before = state(r);
        }
        try (Varve r = Varve.open(config(dir, which, RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE)) {
            assertEquals(before, state(r), "after close");
            assertEquals(List.of(), r.danglingArchiveMappings());
        }
        try (Varve ro = Varve.openReadOnly(config(dir, which, RecoveryMode.WAL_PHYSICAL))) {
            assertEquals(before, state(ro), "read-only");
            assertNotNull(StoreInspector.dropped(ro));
        }
    }
}
