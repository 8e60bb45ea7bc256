package dev.varve.server;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Cursor;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Follow mode under concurrent writers (puts, removes, batches, new tables of both placements, destroyed partitions)
 * and a thread declaring snapshots (plain, with a batch, raised): the standby as of every sender snapshot it maps
 * equals the sender as of that snapshot, read through its own history.
 */
@Timeout(240)
class FollowConcurrentTest {
    @TempDir
    Path dir;
    /**
     * Threads of the test's own for the follow and the writers, which run until told: in the common pool (one or two
     * workers on two cores) a task queued behind them would not start.
     */
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    /**
     * 25 rounds, 16 of them declarations (this seed): each declaration waits for the checkpoint write lock that the three
     * writers keep taking for reading, about half a second on two busy cores, while the writers take both cores.
     */
    @Test
    void theStandbyEqualsTheSenderAsOfEveryMappedSnapshot() throws Exception {
        followWhileWriting(25, 14); // about 18 mapped: the image's, the 16 of the rounds, the last
    }

    /** -Plong: 75 rounds, 54 of them declarations; it took two minutes of the default suite's two cores. */
    @Test
    @Tag("long")
    void theStandbyEqualsTheSenderAsOfEveryMappedSnapshotOverMoreRounds() throws Exception {
        followWhileWriting(75, 45); // about 56 mapped
    }

    /** Runs {@code rounds} rounds of declarations beside the writers; the standby must map more than {@code minMapped} snapshots. */
    private void followWhileWriting(int rounds, int minMapped) throws Exception {
        Path target = dir.resolve("standby");
        RankTreePolicy keepAll = RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll());
        try (Varve store = Varve.open(SmallStore.fresh(dir.resolve("source")).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .dataRegionSize(64L << 20).partitions(4).retention(keepAll).build(), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            store.table("a");
            store.table("grid", TableOptions.callerPlaced(3));
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).retention(keepAll).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run, threads);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) Thread.sleep(5);
            ConcurrentLinkedQueue<String> tables = new ConcurrentLinkedQueue<>(List.of("a", "grid"));
            AtomicBoolean stop = new AtomicBoolean();
            List<CompletableFuture<Void>> writers = new ArrayList<>();
            for (int w = 0; w < 3; w++) {
                int seed = w;
                writers.add(CompletableFuture.runAsync(() -> write(store, new Random(seed), seed, tables, stop), threads));
            }
            Random rnd = new Random(99);
            for (int s = 0; s < rounds && !writers.stream().anyMatch(CompletableFuture::isCompletedExceptionally); s++) {
                int dice = rnd.nextInt(4);
                if (dice == 0) {
                    store.writeAndSnapshot(b -> b.put("a", bytes("snap" + rnd.nextInt(50)), bytes("s")), 1 + rnd.nextInt(2));
                } else if (dice == 1) {
                    long id = store.snapshots().get(rnd.nextInt(store.snapshots().size())).id();
                    store.rank(id, 2);
                } else {
                    store.snapshotNow(1);
                }
                Thread.sleep(1);
            }
            stop.set(true);
            for (CompletableFuture<Void> w : writers) w.get();
            long last = store.snapshotNow();
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (held.latest() < last && !run.isDone() && System.nanoTime() < deadline) Thread.sleep(20);
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
            Map<Long, Long> map = Standby.snapshots(target);
            assertTrue(map.size() > minMapped, "snapshots mapped: " + map.size());
            try (Varve standby = Varve.open(SmallStore.config(target).retention(keepAll).build(), UnforcedFileIOFactory.INSTANCE)) {
                for (Map.Entry<Long, Long> m : map.entrySet()) {
                    try (SnapshotView sender = store.asOf(m.getKey()); SnapshotView mirror = standby.asOf(m.getValue())) {
                        assertEquals(contents(sender.tables(), sender::table), contents(mirror.tables(), mirror::table), "as of sender snapshot " + m.getKey());
                    }
                }
                assertEquals(contents(store.tables(), store::table), contents(standby.tables(), standby::table), "latest");
            }
        }
    }

    private static void write(Varve store, Random rnd, int writer, ConcurrentLinkedQueue<String> tables, AtomicBoolean stop) {
        for (int i = 0; !stop.get(); i++) {
            List<String> names = new ArrayList<>(tables);
            String t = names.get(rnd.nextInt(names.size()));
            int dice = rnd.nextInt(100);
            if (dice < 2 && tables.size() < 60) {
                String name = "w" + writer + "-" + i;
                if (rnd.nextBoolean()) store.table(name, TableOptions.callerPlaced(2));
                else store.table(name);
                tables.add(name);
                continue;
            }
            Table table = store.table(t);
            boolean placed = table.options().callerPlaced();
            byte[] k = bytes("k" + rnd.nextInt(200));
            int p = placed ? rnd.nextInt(table.partitions()) : -1;
            if (dice < 3) {
                table.partition(rnd.nextInt(table.partitions())).destroy();
            } else if (dice < 15) {
                if (placed) table.partition(p).remove(k);
                else table.remove(k);
            } else if (dice < 30) {
                String other = names.get(rnd.nextInt(names.size()));
                Table o = store.table(other);
                byte[] k2 = bytes("b" + rnd.nextInt(100));
                store.write(b -> {
                    if (placed) b.put(t, p, k, bytes("batch" + writer));
                    else b.put(t, k, bytes("batch" + writer));
                    if (o.options().callerPlaced()) b.remove(other, 0, k2);
                    else b.put(other, k2, bytes("x"));
                });
            } else {
                byte[] v = new byte[rnd.nextInt(10) == 0 ? 5000 : 20];
                rnd.nextBytes(v);
                if (placed) table.partition(p).put(k, v);
                else table.put(k, v);
            }
        }
    }

    private static Map<String, TreeMap<String, String>> contents(List<String> names, Function<String, Table> tables) {
        Map<String, TreeMap<String, String>> out = new TreeMap<>();
        HexFormat hex = HexFormat.of();
        for (String n : names) {
            Table t = tables.apply(n);
            TreeMap<String, String> m = new TreeMap<>();
            for (int p = 0; p < t.partitions(); p++) {
                try (Cursor c = t.partition(p).scan(null, null)) {
                    while (c.next()) m.put(p + "/" + hex.formatHex(c.key()), hex.formatHex(c.value()));
                }
            }
            out.put(n, m);
        }
        return out;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
