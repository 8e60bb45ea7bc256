package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import static dev.varve.snapshot.RankTreeReplays.recorded;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Random histories of the rank tree under a stepped wall clock, against the time that really passed: the live run, a
 * replay from its last mark after a crash (keeping every snapshot a later raise record names, as the registry does),
 * and, half the time, a second replay from a mark the first one took. No snapshot is ever dropped before its keepFor
 * age in real time, by the rank the live run left it at ("longer, never shorter", operations.md). Declarations read
 * their time in id order, as the store's do under its checkpoint write lock; an archiver check may come between a
 * declaration's read and its count, after the clock moved or stepped back.
 */
class RankTreeRealAgeHistoryTest {
    private static final long LEVEL_1 = 2_000;
    private static final long LEVEL_2 = 6_000;
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(LEVEL_1)),
            Retention.keepFor(Duration.ofMillis(LEVEL_2)));
    private static final long T = Duration.ofDays(20_000).toMillis();

    /** A WAL record after the mark: a declaration at {@code declared}, or a raise of {@code id} to rank 2. */
    private record Rec(long id, long declared, boolean raise) {
    }

    /** Seeds 0 to 4,999; one of them alone with -Dvarve.seed=N, which a failure names. */
    @Test
    void noSnapshotIsDroppedBeforeItsAgeInRealTime() {
        String one = System.getProperty("varve.seed");
        int from = one == null ? 0 : Integer.parseInt(one);
        int to = one == null ? 5_000 : from + 1;
        for (int seed = from; seed < to; seed++) assertNull(history(seed), "seed " + seed + " (rerun with -Dvarve.seed=" + seed + ")");
    }

    private static long keep(int rank) {
        return rank >= 2 ? LEVEL_2 : LEVEL_1;
    }

    /** The history of {@code seed}; null, or what was dropped early and the history that did it. */
    private static String history(int seed) {
        Random rnd = new Random(seed);
        StringBuilder log = new StringBuilder();
        RankTree run = new RankTree(POLICY);
        run.reset(List.of(), PolicyClock.NONE, 0);
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        Map<Long, Long> realDeclared = new HashMap<>();
        long wall = T;
        long real = T;
        run.drops(live::get, wall, true);
        PolicyClock mark = recorded(run.clock(live::get, wall));
        TreeMap<Long, SnapshotRecord> atMark = new TreeMap<>(live);
        List<Rec> wal = new ArrayList<>();
        long nextId = 1;
        for (int i = 10 + rnd.nextInt(70); i > 0; i--) {
            int e = rnd.nextInt(10);
            if (e <= 1) {
                int d = rnd.nextInt(1500);
                wall += d;
                real += d;
                log.append(" advance to ").append(wall - T);
            } else if (e == 2) {
                wall -= stepBack(rnd);
                log.append(" back to ").append(wall - T);
            } else if (e == 3) {
                String early = check(run, live, wall, real, realDeclared, "the archiver's check");
                if (early != null) return early + log;
                log.append(" check at ").append(wall - T);
            } else if (e <= 6) {
                long readWall = wall;
                long readReal = real;
                if (rnd.nextInt(3) == 0) { // paused after its read: the clock moves, maybe steps back, and the archiver checks
                    int d = rnd.nextInt(1200);
                    wall += d;
                    real += d;
                    if (rnd.nextBoolean()) wall -= stepBack(rnd);
                    String early = check(run, live, wall, real, realDeclared, "a check while a declaration paused");
                    if (early != null) return early + log;
                    log.append(" [read ").append(readWall - T).append(", check at ").append(wall - T).append("]");
                }
                Rec rec = new Rec(nextId++, readWall, false);
                realDeclared.put(rec.id(), readReal);
                wal.add(rec);
                for (long id : apply(run, live, rec, Set.of()))
                    if (real - realDeclared.get(id) <= LEVEL_1) return "live: declaration " + rec.id() + " dropped " + id + " early:" + log;
                log.append(" declare ").append(rec.id()).append(" at ").append(readWall - T);
            } else if (e == 7) {
                List<Long> ones = live.values().stream().filter(s -> s.rank() == 1).map(SnapshotRecord::id).toList();
                if (ones.isEmpty()) continue;
                long id = ones.get(rnd.nextInt(ones.size()));
                wal.add(new Rec(id, -1, true));
                raise(run, live, id);
                String early = check(run, live, wall, real, realDeclared, "the raise's check"); // a raise reads the clock
                if (early != null) return early + log;
                log.append(" raise ").append(id).append(" at ").append(wall - T);
            } else {
                mark = recorded(run.clock(live::get, wall));
                atMark = new TreeMap<>(live);
                wal.clear();
                log.append(" MARK at ").append(wall - T);
            }
        }
        // the crash: down for a while, the wall clock perhaps stepped back meanwhile
        int down = rnd.nextInt(3000);
        long reopenWall = wall + down - (rnd.nextBoolean() ? rnd.nextInt(4000) : 0);
        long reopenReal = real + down;
        Map<Long, Integer> ranks = new HashMap<>();
        for (SnapshotRecord s : live.values()) ranks.put(s.id(), s.rank());
        RankTree replay = new RankTree(POLICY);
        TreeMap<Long, SnapshotRecord> replayed = new TreeMap<>(atMark);
        replay.reset(replayed.values(), mark, reopenWall);
        Map<Long, Integer> ahead = raisesAfter(wal, -1);
        List<Long> dropped = new ArrayList<>();
        int secondCrashAfter = !wal.isEmpty() && rnd.nextBoolean() ? rnd.nextInt(wal.size()) : -1;
        for (int i = 0; i < wal.size(); i++) {
            Rec rec = wal.get(i);
            if (rec.raise() && replayed.containsKey(rec.id())) ahead.computeIfPresent(rec.id(), (k, n) -> n == 1 ? null : n - 1);
            dropped.addAll(apply(replay, replayed, rec, ahead.keySet()));
            if (i == secondCrashAfter) { // a mark replay takes, then a crash: the next open replays from that mark
                PolicyClock midReplay = recorded(replay.clockAsRead(replayed::get));
                int downAgain = rnd.nextInt(3000);
                reopenWall += downAgain - (rnd.nextBoolean() ? rnd.nextInt(4000) : 0);
                reopenReal += downAgain;
                replay = new RankTree(POLICY);
                replay.reset(replayed.values(), midReplay, reopenWall);
                ahead = raisesAfter(wal, i);
                log.append(" SECOND CRASH after record ").append(i);
            }
        }
        for (RankTree.Verdict v : replay.drops(replayed::get, reopenWall, true)) { // the open, at today's clock
            dropped.add(v.id());
            replay.remove(replayed.remove(v.id()));
        }
        for (long id : dropped) {
            Integer rank = ranks.get(id);
            if (rank != null && reopenReal - realDeclared.get(id) <= keep(rank))
                return "replay dropped " + id + " (rank " + rank + ") " + (reopenReal - realDeclared.get(id)) + " ms after its declaration:" + log;
        }
        return null;
    }

    private static int stepBack(Random rnd) {
        return 1 + rnd.nextInt(rnd.nextBoolean() ? 900 : 3000);
    }

    /** The snapshot of each raise record after {@code index}, with how many. */
    private static Map<Long, Integer> raisesAfter(List<Rec> wal, int index) {
        Map<Long, Integer> ahead = new HashMap<>();
        for (int j = index + 1; j < wal.size(); j++) if (wal.get(j).raise()) ahead.merge(wal.get(j).id(), 1, Integer::sum);
        return ahead;
    }

    /** A check reading the clock at {@code wall}; what it dropped early in real time, or null. */
    private static String check(RankTree tree, TreeMap<Long, SnapshotRecord> live, long wall, long real, Map<Long, Long> realDeclared, String what) {
        for (RankTree.Verdict v : tree.drops(live::get, wall, true)) {
            SnapshotRecord x = live.remove(v.id());
            tree.remove(x);
            if (real - realDeclared.get(x.id()) <= keep(x.rank())) return "live: " + what + " dropped " + x + " early:";
        }
        return null;
    }

    private static void raise(RankTree tree, TreeMap<Long, SnapshotRecord> live, long id) {
        SnapshotRecord before = live.get(id);
        SnapshotRecord raised = new SnapshotRecord(id, 2, before.declaredMillis(), 0, before.walLsn());
        live.put(id, raised);
        tree.raise(before, raised);
    }

    /**
     * Applies {@code rec} as replay does (no clock read: a declaration at its time, a raise at its snapshot's); a
     * verdict on a snapshot in {@code held} waits, as the registry's does for a raise ahead. Returns what it dropped.
     */
    private static List<Long> apply(RankTree tree, TreeMap<Long, SnapshotRecord> live, Rec rec, Set<Long> held) {
        long now;
        if (rec.raise()) {
            if (!live.containsKey(rec.id())) return List.of();
            now = live.get(rec.id()).declaredMillis();
            raise(tree, live, rec.id());
        } else {
            SnapshotRecord s = new SnapshotRecord(rec.id(), 1, rec.declared(), 0, rec.id());
            live.put(s.id(), s);
            tree.add(s);
            now = rec.declared();
        }
        List<Long> dropped = new ArrayList<>();
        for (RankTree.Verdict v : tree.drops(live::get, now, false)) {
            if (held.contains(v.id())) {
                tree.candidate(v.id());
                continue;
            }
            dropped.add(v.id());
            tree.remove(live.remove(v.id()));
        }
        return dropped;
    }
}
