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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ranked retention under real kill -9: a child JVM runs steps — batch {@code i}, then snapshot {@code i + 1} of a
 * rank drawn from (seed, i) (on even steps both at once, through {@link Varve#writeAndSnapshot}), then on some steps a
 * lazy raise of the snapshot two steps back — with a page window of 2,
 * so raised snapshots are copied into their level by the checkpoints it is killed in the middle of. After each kill
 * the store is reopened in the other recovery mode and must hold exactly the policy's snapshots for the steps it
 * recovered (every acknowledged one), each reading right as of its declaration.
 */
@Timeout(600)
class RankedKillTest {
    private static final long SEED = 7;
    private static final int[] KEEP_LAST = {6, 3}; // level 3 keeps all

    @TempDir
    Path tmp;

    static VarveConfig config(Path dir, RecoveryMode mode) {
        return KillWorkload.config(dir, mode).toBuilder().snapshotPageWindow(2).archiveSegmentSize(256L << 10).checkpointFrequency(Duration.ofMillis(50))
                .retention(RankTreePolicy.levels(Retention.keepLast(KEEP_LAST[0]), Retention.keepLast(KEEP_LAST[1]), Retention.keepAll())).build();
    }

    /** The policy's view of the steps: every snapshot's rank, the live ones, drops final. */
    static final class Model {
        final Map<Long, Integer> ranks = new TreeMap<>();
        final TreeSet<Long> live = new TreeSet<>();

        static int rankOf(long step) {
            int r = new Random(SEED * 31 + step).nextInt(100);
            return r < 1 ? 3 : r < 15 ? 2 : 1;
        }

        /** The raise step {@code step} makes after its declaration, as {id, new rank}, or null. */
        long[] raise(long step) {
            long target = step - 1; // declared two steps back (ids are steps + 1)
            if (step % 4 != 1 || !live.contains(target)) return null;
            int rank = ranks.get(target);
            int raised = rank + (new Random(SEED * 17 + step).nextInt(10) == 0 ? 2 : 1);
            return rank >= 3 ? null : new long[]{target, Math.min(3, raised)};
        }

        void declare(long step) {
            ranks.put(step + 1, rankOf(step));
            live.add(step + 1);
            enforce();
        }

        /** A raise counts the snapshot at more levels, which can push an older one out of them. */
        void rank(long id, int rank) {
            ranks.put(id, rank);
            enforce();
        }

        private void enforce() {
            TreeSet<Long> keep = new TreeSet<>();
            for (int level = 1; level <= 3; level++) {
                int lv = level;
                List<Long> counted = live.stream().filter(id -> ranks.get(id) >= lv).collect(Collectors.toList());
                int n = level == 3 ? Integer.MAX_VALUE : KEEP_LAST[level - 1];
                keep.addAll(counted.subList(Math.max(0, counted.size() - n), counted.size()));
            }
            live.retainAll(keep);
        }

        /** The model after {@code steps} whole steps. */
        static Model after(long steps) {
            Model m = new Model();
            for (long s = 0; s < steps; s++) {
                m.declare(s);
                long[] r = m.raise(s);
                if (r != null) m.rank(r[0], (int) r[1]);
            }
            return m;
        }
    }

    /** Child JVM: {@code main(dir, mode, firstStep, ackFile)} runs steps until killed, acknowledging each whole step. */
    public static void main(String[] args) throws Exception {
        long from = Long.parseLong(args[2]);
        Model model = Model.after(from);
        try (Varve store = Varve.open(config(Path.of(args[0]), RecoveryMode.valueOf(args[1])), UnforcedFileIOFactory.INSTANCE);
             FileOutputStream ack = new FileOutputStream(args[3], true)) {
            // the raise of the last recovered step may have been lost with the crash: the policy needs it again
            for (SnapshotInfo s : store.snapshots()) if (s.rank() < model.ranks.get(s.id())) store.rank(s.id(), model.ranks.get(s.id()));
            for (long i = from; ; i++) {
                long id;
                if (i % 2 == 0) { // the batch and its snapshot in one commit
                    id = store.writeAndSnapshot(DeterministicReplayTestSupport.batch(i), Model.rankOf(i));
                } else {
                    DeterministicReplayTestSupport.workload(store, i, i + 1);
                    id = store.snapshotNow(Model.rankOf(i));
                }
                if (id != i + 1) throw new IllegalStateException("snapshot " + id + " declared at step " + i);
                model.declare(i);
                long[] r = model.raise(i);
                if (r != null) {
                    store.rank(r[0], (int) r[1]);
                    model.rank(r[0], (int) r[1]);
                }
                ack.write((i + "\n").getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void killedWhileRankingAndCopyingRecoversExactlyThePolicysSnapshots() throws Exception {
        run(Integer.getInteger("varve.killRounds", 4), Long.getLong("varve.seed", System.nanoTime()));
    }

    @Test
    @Tag("long")
    @Timeout(value = 4, unit = TimeUnit.HOURS)
    void hundredsOfKills() throws Exception {
        run(Integer.getInteger("varve.killRounds", 100), Long.getLong("varve.seed", System.nanoTime()));
    }

    private void run(int rounds, long seed) throws Exception {
        Random rnd = new Random(seed);
        Path dir = tmp.resolve("store");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long steps = 0;
        for (int round = 0; round < rounds; round++) {
            RecoveryMode mode = round % 2 == 0 ? RecoveryMode.CHECKPOINT_RECOVERY_FILE : RecoveryMode.WAL_PHYSICAL;
            RecoveryMode reopen = round % 2 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
            String where = "seed " + seed + " round " + round + " (" + mode + " -> " + reopen + ")";
            long acked = FixtureChildJvm.killUnderLoad(RankedKillTest.class, dir, mode, steps, ack, log, 100 + rnd.nextInt(900), where);
            try (Varve store = Varve.open(config(dir, reopen), UnforcedFileIOFactory.INSTANCE)) {
                List<SnapshotInfo> infos = store.snapshots();
                long declared = infos.get(infos.size() - 1).id(); // the newest is always live (level 1 keeps it)
                assertTrue(declared >= acked, where + ": " + acked + " steps acknowledged but only " + declared + " snapshots recovered");
                // step `declared` may have written its batch without its snapshot only when it is a write then a snapshotNow
                // (odd): an even step's writeAndSnapshot comes back whole or not at all
                assertTrue(KillWorkload.diff(store, KillWorkload.model(declared)) == null
                        || declared % 2 == 1 && KillWorkload.diff(store, KillWorkload.model(declared + 1)) == null, where + ": tables match neither step");
                Model model = Model.after(declared);
                TreeSet<Long> live = infos.stream().map(SnapshotInfo::id).collect(Collectors.toCollection(TreeSet::new));
                Model beforeRaise = Model.after(declared - 1); // the last step up to its snapshot: its raise may be lost
                beforeRaise.declare(declared - 1);
                long[] lastRaise = beforeRaise.raise(declared - 1);
                boolean raiseLost = lastRaise != null && infos.stream().anyMatch(s -> s.id() == lastRaise[0] && s.rank() < lastRaise[1]);
                TreeSet<Long> want = raiseLost ? beforeRaise.live : model.live;
                assertEquals(want, live, where + ": live snapshots after " + declared + " steps");
                for (SnapshotInfo s : infos) {
                    if (raiseLost && s.id() == lastRaise[0]) continue; // the next child raises it again
                    assertEquals(model.ranks.get(s.id()), s.rank(), where + ": rank of snapshot " + s.id());
                }
                checkReads(store, infos, rnd, where);
                assertEquals(List.of(), store.danglingArchiveMappings(), where + ": I8");
                steps = declared;
            }
        }
        long extents;
        try (var files = Files.walk(dir)) {
            extents = files.filter(p -> p.getFileName().toString().startsWith("extent-")).count();
        }
        assertTrue(extents > 0, "raised snapshots were copied into ranked extents");
        System.out.println("ranked kill -9: " + rounds + " rounds, " + steps + " steps, " + extents + " ranked extents live, seed " + seed + ", all consistent");
    }

    /** Every live snapshot of rank 1 or 2 and up to 10 random rank-3 ones read exactly the batches before them. */
    private static void checkReads(Varve store, List<SnapshotInfo> infos, Random rnd, String where) {
        List<SnapshotInfo> sample = new ArrayList<>();
        List<SnapshotInfo> top = new ArrayList<>();
        for (SnapshotInfo s : infos) (s.rank() < 3 ? sample : top).add(s);
        for (int i = 0; i < 10 && !top.isEmpty(); i++) sample.add(top.remove(rnd.nextInt(top.size())));
        for (SnapshotInfo s : sample) {
            try (SnapshotView v = store.asOf(s.id())) {
                assertNull(KillWorkload.diff(v::table, KillWorkload.model(s.id())), where + ": snapshot " + s.id() + " (rank " + s.rank() + ")");
            }
        }
    }
}
