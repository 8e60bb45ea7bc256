package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static dev.varve.engine.LogCompactionRanksTest.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Random ranked-retention histories through the store — snapshots after each write at rare upper ranks, raises of
 * older ones, checkpoints (and so log compactions past snapshots kept for good) between, and crashes or closes
 * followed by reopens in either recovery mode: after each reopen the live snapshots and their ranks are those before,
 * each reads as of its own write, every dropped one is refused as dropped, and the next id follows the latest.
 */
@Timeout(300)
class RandomRetentionHistoryTest {
    static final int KEYS = 40;

    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir, RecoveryMode mode, RankTreePolicy policy) {
        return LogCompactionRanksTest.config(dir, "levels", mode).toBuilder().retention(policy).build();
    }

    /** Step i writes value v{i} to key k{i % KEYS}: as of snapshot id, key k{m} holds the latest such write up to id. */
    private static String valueAsOf(long id, int m) {
        long j = id - Math.floorMod(id - m, KEYS);
        return j >= 1 ? "v" + j : null;
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3})
    void aReopenReadsEveryLiveSnapshotAsOfItsWriteAndRefusesTheDropped(long seed) throws Exception {
        Random random = new Random(seed);
        RankTreePolicy policy = switch ((int) seed % 3) {
            case 0 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(5)), Retention.keepFor(java.time.Duration.ofMinutes(30)), Retention.keepLast(1));
            case 1 -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(5)), Retention.keepAll());
            default -> RankTreePolicy.levels(Retention.keepLast(1 + random.nextInt(5)), Retention.keepLast(3), Retention.keepAll());
        };
        Path dir = tmp.resolve("store");
        int steps = 7000;
        int upperEvery = 200 + random.nextInt(1000);
        Varve s = Varve.open(config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE, policy));
        try {
            for (long i = 1; i <= steps; i++) {
                long n = i;
                int rank = random.nextInt(upperEvery) > 0 ? 1 : 2 + random.nextInt(policy.levelCount() - 1);
                assertEquals(i, s.writeAndSnapshot(b -> b.put("t", utf8("k" + (n % KEYS)), utf8("v" + n)), rank));
                if (random.nextInt(300) == 0) { // a raise of a live snapshot, often an older one
                    List<SnapshotInfo> live = s.snapshots();
                    SnapshotInfo r = live.get(random.nextInt(live.size()));
                    if (r.rank() < policy.levelCount()) s.rank(r.id(), r.rank() + 1);
                }
                if (random.nextInt(500) == 0) s.checkpoint().join();
                if (random.nextInt(1500) != 0 && i != steps) continue;
                List<SnapshotInfo> before = s.snapshots();
                boolean crash = random.nextBoolean();
                if (crash) s.halt();
                else s.close();
                RecoveryMode mode = random.nextBoolean() ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
                s = Varve.open(config(dir, mode, policy));
                String at = "seed " + seed + " (" + policy + "), " + (crash ? "crash" : "close") + " after " + i + ", reopened in " + mode;
                assertEquals(ids(before), ids(s.snapshots()), at + ": the live snapshots");
                assertEquals(before.stream().map(SnapshotInfo::rank).toList(), s.snapshots().stream().map(SnapshotInfo::rank).toList(), at + ": their ranks");
                assertReads(s, i, at);
            }
            long horizon = StoreInspector.droppedBefore(s).orElseThrow().below();
            assertTrue(s.snapshots().get(0).id() < horizon, "the logs were compacted past a live snapshot: horizon " + horizon + ", live " + ids(s.snapshots()));
        } finally {
            s.close();
        }
    }

    private static List<Long> ids(List<SnapshotInfo> infos) {
        List<Long> out = new ArrayList<>();
        for (SnapshotInfo i : infos) out.add(i.id());
        return out;
    }

    /** Every live snapshot of {@code s} reads as of step {@code id}'s write; every other id up to {@code latest} is refused as dropped. */
    static void assertReads(Varve s, long latest, String at) {
        List<Long> live = ids(s.snapshots());
        for (long id : live)
            try (SnapshotView v = s.asOf(id)) {
                for (int m = 0; m < KEYS; m++) {
                    String want = valueAsOf(id, m);
                    byte[] got = v.table("t").get(utf8("k" + m));
                    if (want == null) assertEquals(null, got, at + ": snapshot " + id + " key k" + m);
                    else assertArrayEquals(utf8(want), got, at + ": snapshot " + id + " key k" + m);
                }
            }
        for (long id = 1; id <= latest; id++) {
            if (live.contains(id)) continue;
            long x = id;
            String told = assertThrows(SnapshotNotFoundException.class, () -> s.asOf(x).close(), at + ": dropped snapshot " + id).getMessage();
            assertTrue(told.startsWith("snapshot " + id + " was dropped"), at + ": " + told);
        }
        assertEquals(latest - live.size(), s.droppedSnapshots(Integer.MAX_VALUE).size(), at + ": every drop");
    }
}
