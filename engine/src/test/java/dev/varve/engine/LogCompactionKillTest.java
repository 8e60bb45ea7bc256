package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snapshot, drop and join logs compacted under real kill -9: a child JVM declares a snapshot with every batch
 * ({@link Varve#writeAndSnapshot}) and raises the one before to rank 2, under {@code keepLast(8)} and
 * {@code keepLast(2)} at level 2 (so the raised ones stay among the last 8) with a page window of 2 and checkpoints
 * every 50 ms, so that after a few thousand steps every checkpoint may rewrite a log; it is killed when a compaction's
 * temp file or a new part of a rewritten log shows on disk (or after a while). Reopened in the other recovery mode,
 * the store must hold exactly the last 8 snapshots of the steps it recovered (every acknowledged one), each reading
 * right, the older ones known as dropped — and its logs must stay a small fraction of the history declared.
 */
@Timeout(600)
class LogCompactionKillTest {
    private static final int KEEP = 8;

    /** Snapshot 1: not kept for good, declared at rank 3, or declared at rank 1 and raised to 3 right after. */
    enum Kept { NONE, DECLARED, RAISED }

    @TempDir
    Path tmp;

    /**
     * {@code keptForGood}: a keepAll() level above, and snapshot 1 at rank 3 there ({@link Kept}) — kept for good, the
     * oldest live snapshot for the store's life, which the logs' compactions must see past.
     */
    static VarveConfig config(Path dir, RecoveryMode mode, boolean keptForGood) {
        RankTreePolicy policy = keptForGood ? RankTreePolicy.levels(Retention.keepLast(KEEP), Retention.keepLast(2), Retention.keepAll())
                : RankTreePolicy.levels(Retention.keepLast(KEEP), Retention.keepLast(2));
        return KillWorkload.config(dir, mode).toBuilder().checkpointFrequency(Duration.ofMillis(50)).snapshotPageWindow(2).retention(policy).build();
    }

    /** Child JVM: {@code main(dir, mode, firstStep, ackFile, kept)} runs steps until killed, acknowledging each. */
    public static void main(String[] args) throws Exception {
        Kept kept = Kept.valueOf(args[4]);
        try (Varve store = Varve.open(config(Path.of(args[0]), RecoveryMode.valueOf(args[1]), kept != Kept.NONE), UnforcedFileIOFactory.INSTANCE);
             FileOutputStream ack = new FileOutputStream(args[3], true)) {
            for (long i = Long.parseLong(args[2]); ; i++) {
                long id = store.writeAndSnapshot(DeterministicReplayTestSupport.batch(i), kept == Kept.DECLARED && i == 0 ? 3 : 1);
                if (id != i + 1) throw new IllegalStateException("snapshot " + id + " declared at step " + i);
                if (kept == Kept.RAISED && id == 1) store.rank(1, 3); // its joins, and its copy into level 3, are the logs' first entries
                if (id > (kept != Kept.NONE ? 2 : 1)) store.rank(id - 1, 2); // a join per level now, and a lazy-ranking copy once it leaves the page window
                ack.write((i + "\n").getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void killedWhileCompactingRecoversExactlyTheRetainedSnapshots() throws Exception {
        run(Integer.getInteger("varve.killRounds", 6), Long.getLong("varve.seed", System.nanoTime()), Kept.NONE);
    }

    @Test
    void killedWhileCompactingBehindASnapshotKeptForGoodRecoversExactlyTheRetainedSnapshots() throws Exception {
        run(Integer.getInteger("varve.killRounds", 4), Long.getLong("varve.seed", System.nanoTime()), Kept.DECLARED);
    }

    /**
     * Snapshot 1 raised to the keepAll() level: its joins and its lazy-ranking copy are the first entries of the join
     * and move logs for the store's life, and the compactions write them again to let the rest go (before, joins.log
     * grew by 96 bytes a step: 576 KB after the first round's 6,000).
     */
    @Test
    void killedWhileCompactingBehindARaisedSnapshotKeptForGoodKeepsTheJoinAndMoveLogsBounded() throws Exception {
        run(Integer.getInteger("varve.killRounds", 2), Long.getLong("varve.seed", System.nanoTime()), Kept.RAISED);
    }

    @Test
    @Tag("long")
    @Timeout(value = 4, unit = TimeUnit.HOURS)
    void hundredsOfKills() throws Exception {
        run(Integer.getInteger("varve.killRounds", 100), Long.getLong("varve.seed", System.nanoTime()), Kept.NONE);
    }

    /** The names of the archive's files a compaction writes: its temp files and the drop, join and move logs' parts. */
    private static List<String> compactionFiles(Path archive) {
        try (Stream<Path> files = Files.list(archive)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".creating") && !n.startsWith("pagelog") || n.startsWith("drops.log") || n.startsWith("joins.log")
                            || n.startsWith("moves.log"))
                    .sorted().toList();
        } catch (IOException e) {
            return List.of();
        }
    }

    static long bytesOf(Path archive, String prefix) throws IOException {
        try (Stream<Path> files = Files.list(archive)) {
            long bytes = 0;
            for (Path p : (Iterable<Path>) files.filter(p -> p.getFileName().toString().startsWith(prefix))::iterator) bytes += Files.size(p);
            return bytes;
        }
    }

    private void run(int rounds, long seed, Kept kept) throws Exception {
        boolean keptForGood = kept != Kept.NONE;
        Random rnd = new Random(seed);
        Path dir = tmp.resolve("store");
        Path archive = dir.resolve("archive");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long steps = 0;
        int seenCompacting = 0;
        for (int round = 0; round < rounds; round++) {
            RecoveryMode mode = round % 2 == 0 ? RecoveryMode.CHECKPOINT_RECOVERY_FILE : RecoveryMode.WAL_PHYSICAL;
            RecoveryMode reopen = round % 2 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
            String where = "seed " + seed + " round " + round + " (" + mode + " -> " + reopen + ")";
            long from = steps;
            long atLeast = round == 0 ? 6_000 : 0; // past the first compactions' thresholds before any kill
            List<String> before = compactionFiles(archive);
            long giveUp = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3_000 + rnd.nextInt(3_000));
            boolean[] compacting = {false};
            long acked = FixtureChildJvm.killWhen(LogCompactionKillTest.class, dir, mode, from, ack, log, () -> {
                try {
                    if (KillWorkload.acknowledged(ack) < from + atLeast) return false;
                } catch (IOException e) {
                    return false;
                }
                compacting[0] = !compactionFiles(archive).equals(before);
                return compacting[0] || System.nanoTime() > giveUp;
            }, where, kept.name());
            if (compacting[0]) seenCompacting++;
            try (Varve store = Varve.open(config(dir, reopen, keptForGood), UnforcedFileIOFactory.INSTANCE)) {
                List<SnapshotInfo> infos = store.snapshots();
                long declared = infos.get(infos.size() - 1).id();
                assertTrue(declared >= acked, where + ": " + acked + " steps acknowledged but only " + declared + " snapshots recovered");
                List<Long> ids = new ArrayList<>();
                for (SnapshotInfo s : infos) ids.add(s.id());
                List<Long> want = new ArrayList<>();
                if (keptForGood) want.add(1L);
                for (long id = Math.max(1, declared - KEEP + 1); id <= declared; id++) want.add(id);
                assertEquals(want, ids, where + ": the live snapshots");
                if (keptForGood) assertEquals(3, infos.get(0).rank(), where + ": snapshot 1's rank");
                String tables = KillWorkload.diff(store, KillWorkload.model(declared));
                if (tables != null) {
                    StringBuilder near = new StringBuilder();
                    for (long n = declared - 3; n <= declared + 3; n++) if (KillWorkload.diff(store, KillWorkload.model(n)) == null) near.append(" matches ").append(n);
                    throw new AssertionError(where + ": tables after " + declared + " steps: " + tables + near);
                }
                for (SnapshotInfo s : infos) {
                    try (SnapshotView v = store.asOf(s.id())) {
                        assertNull(KillWorkload.diff(v::table, KillWorkload.model(s.id())), where + ": snapshot " + s.id());
                    }
                }
                long firstDropped = keptForGood ? 2 : 1;
                SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> store.asOf(firstDropped));
                assertTrue(e.getMessage().contains("dropped"), where + ": " + e.getMessage());
                assertFalse(store.droppedSnapshots(1).isEmpty(), where);
                assertEquals(List.of(), store.danglingArchiveMappings(), where + ": I8");
                steps = declared;
            }
        }
        long logBytes = Files.size(archive.resolve("snapshots.log"));
        // the log grows to the compaction threshold (4096 records of 48 bytes, two a step here) between rewrites, so
        // where the last kill fell in that cycle sets its size: bounded by twice the threshold, whatever the history
        // (uncompacted it would hold 96 bytes a step, over 576 KB after the first round's 6,000 steps)
        assertTrue(logBytes < 48L * 2 * 4096, "snapshots.log holds " + logBytes + " bytes after " + steps + " snapshots, " + KEEP + " retained"
                + (keptForGood ? " and snapshot 1 kept for good" : ""));
        assertFalse(Files.exists(archive.resolve("joins.log")), "the join log was compacted (renamed after its first entry held): "
                + compactionFiles(archive));
        // each is rewritten once it holds 4,096 entries (the join log gains 3 a step, the move log about 1) and again,
        // past what a snapshot kept for good wrote long ago, at the checkpoint after: a checkpoint's steps more, with
        // room for a slow checkpoint on a loaded machine (uncompacted, joins.log holds 18,000 after the first round)
        long entryBound = 32L * 3 * 4096;
        for (String name : List.of("joins.log", "moves.log")) {
            long bytes = bytesOf(archive, name);
            assertTrue(bytes < entryBound, name + " holds " + bytes + " bytes after " + steps + " snapshots (bound " + entryBound + "): "
                    + compactionFiles(archive));
        }
        System.out.println("log compaction kill -9: " + rounds + " rounds, " + steps + " steps, " + seenCompacting + " killed while compacting, snapshots.log "
                + logBytes + " bytes, " + compactionFiles(archive) + ", seed " + seed + ", all consistent");
    }
}
