package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.UnforcedFileIOFactory;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * One crash of a store while several writers commit and a declarer calls {@code snapshotNow}, {@code writeAndSnapshot}
 * and {@code rank} in turn, and the check that nothing acknowledged about a snapshot was lost
 * ({@link AcknowledgedSnapshotPowerLossTest}, {@link AcknowledgedSnapshotProcessCrashTest}). The crash comes at the
 * n-th file operation (or WAL write) after one of the declarer's calls returned — a power loss under {@code FSYNC},
 * a process crash under {@code LOG_ONLY}, where every write the process made stays as the page cache keeps it.
 * Afterwards every returned snapshot id must read exactly what it read before the crash, a cut of each writer's
 * sequence between what was acknowledged before the call and what began after it returned, with every batch
 * committed with or before it; every returned raise must be kept; the current state must hold every acknowledged write.
 * Under keepLast windows the live snapshots must be exactly those the policy keeps for the returned declarations and
 * raises (and what the crash kept of the call in flight), and {@code asOf} of the others must say they were dropped.
 */
final class SnapshotCrashRun {
    private static final int WRITERS = 3;
    private static final int LEVELS = 3;
    /** RETENTION_DROPS's windows of levels 1 and 2; level 3 keeps all. */
    private static final int[] KEEP_LAST = {3, 2};
    /** Crash points of the default suite (file operations after the arming call returned): dense first, then sparser. */
    static final int[] POINTS = {1, 2, 4, 9, 17, 40};

    private SnapshotCrashRun() {
    }

    /** What runs around the declarations. */
    enum Load {
        /** Small puts and removes: declarations share group commits with them. */
        GROUP_COMMITS(16, 60, 200, false),
        /** As {@link #GROUP_COMMITS} under keepLast windows: declarations and raises drop older snapshots. */
        RETENTION_DROPS(16, 60, 200, false),
        /** Values of several KB on 4 MiB segments, checkpoints back to back: the crash comes around a segment switch. */
        SEGMENT_SWITCHES_AND_CHECKPOINTS(16, 4000, 8000, true),
        /** A 256 KiB capture buffer (64 pages) and some hundred pages rewritten: declarations meet a full buffer. */
        FULL_CAPTURE_BUFFER(400, 200, 100, false);

        final int keysPerWriter;
        final int valueBase;
        final int valueSpread;
        final boolean checkpoints;

        Load(int keysPerWriter, int valueBase, int valueSpread, boolean checkpoints) {
            this.keysPerWriter = keysPerWriter;
            this.valueBase = valueBase;
            this.valueSpread = valueSpread;
            this.checkpoints = checkpoints;
        }
    }

    /** One returned declaration or raise: the snapshot, and what bounds its state. */
    private record Declared(long id, int[] ackedBefore, int[] startedAfter, TreeSet<Integer> batches, List<Map<Integer, Integer>> readLive) {
    }

    /** One store, its writers, its declarer and the crash. */
    static final class Run {
        final Load load;
        final WalSyncMode sync;
        final int point;
        /** True: the crash is a power cut in the point-th WAL write; false: at the point-th file operation. */
        final boolean walCut;
        final long seed;
        final VarveConfig config;
        final FaultyFileIOFactory io;
        final Varve store;
        final AtomicInteger[] acked = new AtomicInteger[WRITERS];
        final AtomicInteger[] started = new AtomicInteger[WRITERS];
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicBoolean armed = new AtomicBoolean();
        final List<Declared> declared = new ArrayList<>();
        /** Snapshot id -> its rank as last acknowledged; a raise in flight at the crash may have landed too. */
        final Map<Long, Integer> ranks = new HashMap<>();
        long raiseInFlightId = -1;
        int raiseInFlightRank;
        final TreeSet<Integer> batches = new TreeSet<>();
        /** The declarer's last call's index. */
        int tried;
        /** The WAL segment the declarer saw last, for segment switches. */
        long lastSegment;
        final List<Throwable> unexpected = new ArrayList<>();

        Run(Path dir, Load load, WalSyncMode sync, int point, boolean walCut) {
            this.load = load;
            this.sync = sync;
            this.point = point;
            this.walCut = walCut;
            this.seed = 1000L * load.ordinal() + 100L * sync.ordinal() + (walCut ? 50 : 0) + point;
            Path path = dir.resolve(load + "-" + sync + "-" + point + (walCut ? "-cut" : ""));
            VarveConfig.Builder b = FixtureSupport.small(path).walSyncMode(sync).dataRegionSize(32L << 20)
                    .retention(load == Load.RETENTION_DROPS
                            ? RankTreePolicy.levels(Retention.keepLast(KEEP_LAST[0]), Retention.keepLast(KEEP_LAST[1]), Retention.keepAll())
                            : RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll(), Retention.keepAll()));
            if (load == Load.FULL_CAPTURE_BUFFER) b.captureBufferSize(256L << 10);
            config = b.build();
            io = new FaultyFileIOFactory(seed);
            // stepped agents: an archiver step runs only inside a writer that found the capture buffer full
            store = Varve.open(config, io, load == Load.FULL_CAPTURE_BUFFER ? Agents.invoked() : Agents.dedicated());
            for (int w = 0; w < WRITERS; w++) {
                acked[w] = new AtomicInteger();
                started[w] = new AtomicInteger();
            }
        }

        String what() {
            return load + ", " + sync + ", " + (walCut ? "power cut in WAL write " : "crash at file operation ") + point + " after arming, seed "
                    + seed + ", " + io;
        }

        void crashAndCheck() throws Exception {
            store.write(b -> b.put("d", utf8("base"), new byte[1])); // both tables exist before any snapshot
            for (int w = 0; w < WRITERS; w++) while (started[w].get() < load.keysPerWriter) writeNext(w);
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                threads.add(thread("writer-" + w, () -> {
                    while (!stop.get()) writeNext(writer);
                }));
            }
            threads.add(thread("declarer", this::declare));
            if (load.checkpoints) threads.add(thread("checkpoints", () -> {
                while (!stop.get()) store.checkpoint().join();
            }));
            while (io.crashedAt() == null && threads.stream().anyMatch(Thread::isAlive)) Thread.sleep(1);
            stop.set(true);
            for (Thread t : threads) t.join();
            for (Throwable t : unexpected) {
                // after the crash every call may fail, but never by reading a wrong state
                if (io.crashedAt() == null || t instanceof AssertionError) throw new AssertionError(what() + ": " + t, t);
            }
            assertTrue(armed.get(), what() + ": the writers stopped before the crash was armed");
            store.halt();
            Varve back;
            if (sync == WalSyncMode.FSYNC) {
                io.powerLoss();
                back = Varve.open(config, io);
            } else {
                back = Varve.open(config, UnforcedFileIOFactory.INSTANCE); // kill -9: the page cache keeps every write
            }
            try (back) {
                check(back);
            }
        }

        /** Runs writer w's next op: seq s puts key s % keysPerWriter, or removes it every fifth seq. */
        void writeNext(int w) {
            int s = started[w].incrementAndGet();
            byte[] key = key(w, s % load.keysPerWriter);
            if (s % 5 == 4) store.table("t").remove(key);
            else store.table("t").put(key, value(w, s));
            acked[w].set(s);
        }

        void declare() {
            Random rnd = new Random(seed);
            for (int i = 0; !stop.get(); i++) {
                tried = i;
                int[] before = counts(acked);
                long id;
                if (i % 3 == 2 && !raisable().isEmpty()) {
                    List<Long> candidates = raisable();
                    // under keepLast windows only the latest snapshot is surely live to be raised
                    long target = candidates.get(load == Load.RETENTION_DROPS ? candidates.size() - 1 : rnd.nextInt(candidates.size()));
                    raiseInFlightId = target;
                    raiseInFlightRank = Math.min(LEVELS, ranks.get(target) + 1 + rnd.nextInt(2));
                    store.rank(target, raiseInFlightRank);
                    ranks.put(target, raiseInFlightRank);
                    raiseInFlightId = -1;
                    arm(i);
                    continue;
                }
                if (i % 3 == 1) {
                    int batch = i;
                    id = store.writeAndSnapshot(b -> b.put("d", utf8("batch-" + batch), utf8("batch-" + batch)));
                    batches.add(batch);
                } else {
                    id = store.snapshotNow();
                }
                ranks.put(id, 1);
                Declared d = new Declared(id, before, counts(started), new TreeSet<>(batches), new ArrayList<>());
                declared.add(d);
                arm(i);
                try (SnapshotView v = store.asOf(id)) {
                    for (int w = 0; w < WRITERS; w++) d.readLive.add(read(v.table("t"), w));
                } catch (RuntimeException crashed) {
                    d.readLive.clear(); // the crash came first: its bounds still hold it
                    if (io.crashedAt() == null) throw crashed;
                }
            }
        }

        /**
         * Arms the crash once enough declarations returned — for segment switches, close to a segment's end or just
         * after a switch (the writers outrun the declarer); for the capture buffer, once a writer found it full (the
         * only wait of these writers: no checkpoint runs).
         */
        void arm(int i) {
            if (armed.get() || i < 4) return;
            if (load == Load.SEGMENT_SWITCHES_AND_CHECKPOINTS) {
                long segment = config.walSegmentSize();
                long position = store.engine().wal.position();
                boolean switched = position / segment != lastSegment;
                lastSegment = position / segment;
                if (position < segment || !switched && position % segment < segment - (192L << 10)) return;
            }
            if (load == Load.FULL_CAPTURE_BUFFER && store.metrics().throttledNanos() == 0) return;
            armed.set(true);
            if (walCut) io.powerCutAt(FaultyFileIOFactory.nth(point, op -> op.kind() == Kind.WRITE && op.names("wal-")));
            else io.crashAt(FaultyFileIOFactory.nth(point, op -> true));
        }

        List<Long> raisable() {
            List<Long> out = new ArrayList<>();
            ranks.forEach((id, r) -> {
                if (r < LEVELS) out.add(id);
            });
            out.sort(null);
            return out;
        }

        Thread thread(String name, Runnable body) {
            Thread t = new Thread(() -> {
                try {
                    body.run();
                } catch (RuntimeException | Error e) {
                    synchronized (unexpected) {
                        unexpected.add(e); // after the crash every thread ends this way
                    }
                    stop.set(true);
                }
            }, name);
            t.start();
            return t;
        }

        void check(Varve back) {
            Map<Long, Integer> found = new HashMap<>();
            back.snapshots().forEach(s -> found.put(s.id(), s.rank()));
            Set<Long> live = expectedLive(found);
            assertEquals(live, found.keySet(), what() + ": the live snapshots");
            for (Declared d : declared) {
                String at = what() + ": snapshot " + d.id();
                if (!live.contains(d.id())) {
                    SnapshotNotFoundException e = assertThrows(SnapshotNotFoundException.class, () -> back.asOf(d.id()), at);
                    assertTrue(e.getMessage().contains("dropped by the retention policy"), at + ": " + e.getMessage());
                    continue;
                }
                assertTrue(found.containsKey(d.id()), at + " returned but is gone after the crash; live: " + found.keySet());
                int rank = found.get(d.id());
                int acknowledged = ranks.get(d.id());
                if (rank != acknowledged && !(d.id() == raiseInFlightId && rank == raiseInFlightRank)) {
                    fail(at + ": rank " + rank + " after the crash, but rank " + acknowledged + " was acknowledged");
                }
                try (SnapshotView v = back.asOf(d.id())) {
                    for (int w = 0; w < WRITERS; w++) {
                        Map<Integer, Integer> got = read(v.table("t"), w);
                        assertTrue(cut(w, got, d.ackedBefore()[w], d.startedAfter()[w]), at + ", writer " + w + ": " + got
                                + " is no state after a seq in [" + d.ackedBefore()[w] + ", " + d.startedAfter()[w] + "]");
                        if (!d.readLive().isEmpty()) assertEquals(d.readLive().get(w), got, at + ", writer " + w + ": reads otherwise than before the crash");
                    }
                    assertEquals(d.batches(), batchesIn(v.table("d")), at + ": the batches committed with or before it");
                }
            }
            for (int w = 0; w < WRITERS; w++) {
                Map<Integer, Integer> got = read(back.table("t"), w);
                assertTrue(cut(w, got, acked[w].get(), started[w].get()), what() + ", writer " + w + ": current state " + got
                        + " is no state after a seq in [" + acked[w].get() + ", " + started[w].get() + "]");
            }
        }

        /**
         * The snapshots the policy keeps given the acknowledged ranks, with what the crash may have kept of the calls
         * in flight (a declaration live after it, a raise it shows): all of them unless the load has keepLast windows.
         */
        Set<Long> expectedLive(Map<Long, Integer> found) {
            TreeMap<Long, Integer> ranked = new TreeMap<>(ranks);
            found.forEach((id, r) -> {
                if (!ranks.containsKey(id) || id == raiseInFlightId && r == raiseInFlightRank) ranked.put(id, r);
            });
            if (load != Load.RETENTION_DROPS) return ranked.keySet();
            Set<Long> live = new TreeSet<>();
            for (int level = 1; level <= LEVELS; level++) {
                int at = level;
                List<Long> counted = ranked.entrySet().stream().filter(e -> e.getValue() >= at).map(Map.Entry::getKey).toList();
                int keep = level <= KEEP_LAST.length ? KEEP_LAST[level - 1] : counted.size();
                live.addAll(counted.subList(Math.max(0, counted.size() - keep), counted.size()));
            }
            return live;
        }

        /** True when {@code got} is writer w's keys after some seq in [lo, hi]. */
        boolean cut(int w, Map<Integer, Integer> got, int lo, int hi) {
            return IntStream.rangeClosed(lo, hi).anyMatch(s -> stateAfter(s).equals(got));
        }

        /** Key index -> the seq whose value it holds after seqs 1..s of one writer. */
        Map<Integer, Integer> stateAfter(int s) {
            Map<Integer, Integer> state = new HashMap<>();
            for (int j = 0; j < load.keysPerWriter && j <= s; j++) {
                int last = j + (s - j) / load.keysPerWriter * load.keysPerWriter;
                if (last >= 1 && last % 5 != 4) state.put(j, last);
            }
            return state;
        }

        /** Writer w's keys: key index -> the seq whose value it holds, checking the value is the one that seq wrote. */
        Map<Integer, Integer> read(Table t, int w) {
            Map<Integer, Integer> out = new HashMap<>();
            for (int j = 0; j < load.keysPerWriter; j++) {
                byte[] v = t.get(key(w, j));
                if (v == null) continue;
                int s = ByteBuffer.wrap(v).getInt(4);
                assertArrayEquals(value(w, s), v, what() + ": writer " + w + ", key " + j + " holds a value never written");
                out.put(j, s);
            }
            return out;
        }

        TreeSet<Integer> batchesIn(Table d) {
            TreeSet<Integer> out = new TreeSet<>();
            for (int i : batchesTried()) if (d.get(utf8("batch-" + i)) != null) out.add(i);
            return out;
        }

        /** Every declaration index that was a batch, returned or not. */
        List<Integer> batchesTried() {
            List<Integer> out = new ArrayList<>();
            for (int i = 1; i <= tried; i += 3) out.add(i);
            return out;
        }

        byte[] value(int w, int s) {
            byte[] v = FixtureSupport.bytes(w * 1_000_000_007L + s, 8 + load.valueBase + (s * 7919) % load.valueSpread);
            ByteBuffer.wrap(v).putInt(w).putInt(s);
            return v;
        }
    }

    private static int[] counts(AtomicInteger[] of) {
        int[] out = new int[of.length];
        for (int i = 0; i < of.length; i++) out[i] = of[i].get();
        return out;
    }

    private static byte[] key(int w, int j) {
        return utf8(String.format("w%d-k%04d", w, j));
    }
}
