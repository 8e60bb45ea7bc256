package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A follow stream cut by kill -9, in both recovery modes: of the receiver (the backup command in a child JVM) while
 * it applies changes, or of the sender (a writing child JVM). Either way the standby opens (recovering) and every
 * sender snapshot it declared equals that snapshot's model.
 */
@Timeout(180)
class FollowKillTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(240)
    void standbyOfAKilledReceiverOpensAtEverySnapshotItHolds(RecoveryMode mode) throws Exception {
        Path target = dir.resolve("standby");
        Map<Long, Map<String, TreeMap<String, byte[]>>> models = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), mode), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            Workload w = new Workload(17, 1500);
            w.createTables(store);
            for (int i = 0; i < 1000; i++) w.step(store);
            Thread writer = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        for (int i = 0; i < 200; i++) w.step(store);
                        long id = store.snapshotNow();
                        models.put(id, w.snapshot());
                        Thread.sleep(50); // a pace the standby keeps up with (FollowTest covers one that falls behind)
                    }
                } catch (Throwable t) {
                    writerFailure.set(t);
                }
            }, "writer");
            try (ChildJvm receiver = ChildJvm.start(ReceiverFixture.class, Integer.toString(server.address().getPort()), "follow", target.toString())) {
                // the writer starts once the image is in: a loaded machine must not make the image transfer outlast the
                // sender's follow buffer (a JDK 25 run with two builds on 2 cores did: "fell more than 64 MiB behind")
                receiver.awaitLine("image", 120);
                writer.start();
                for (int i = 0; i < 4; i++) receiver.awaitLine("standby holds sender snapshot", 120);
                receiver.kill9();
            } finally {
                stop.set(true);
                writer.join(30_000);
            }
            if (writerFailure.get() != null) throw new AssertionError("writer failed", writerFailure.get());
        }
        assertStandbyHoldsModels(target, models);
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(240)
    void standbyOfAKilledSenderOpensAtEverySnapshotItHolds(RecoveryMode mode) throws Exception {
        Path target = dir.resolve("standby");
        long seed = 23;
        int keys = 1500;
        Map<Long, Long> stepsAt = new ConcurrentHashMap<>();
        try (ChildJvm sender = ChildJvm.start(SenderFixture.class, dir.resolve("source").toString(), mode.name(), Long.toString(seed),
                Integer.toString(keys), "1000", "follow")) {
            int port = Integer.parseInt(sender.awaitLine("READY", 120).split(" ")[1]);
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(new InetSocketAddress("127.0.0.1", port), 1, target).follow(true).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            while (held.count() < 4) {
                String[] line = sender.awaitLine("SNAPSHOT", 120).split(" ");
                stepsAt.put(Long.parseLong(line[1]), Long.parseLong(line[2]));
            }
            sender.kill9();
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> run.get(120, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("follow stream"), e.getCause().getMessage());
        }
        // rebuild the model of every snapshot the sender declared, in step order
        Map<Long, Map<String, TreeMap<String, byte[]>>> models = new ConcurrentHashMap<>();
        Workload w = new Workload(seed, keys);
        w.replay(1000);
        for (Map.Entry<Long, Long> s : new TreeMap<>(stepsAt).entrySet()) {
            w.replay(s.getValue() - w.steps());
            models.put(s.getKey(), w.snapshot());
        }
        assertStandbyHoldsModels(target, models);
    }

    /** Opens the standby; every sender snapshot it declared that has a model equals it; at least three do. */
    private static void assertStandbyHoldsModels(Path target, Map<Long, Map<String, TreeMap<String, byte[]>>> models) {
        int compared = 0;
        try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
            long latestLocal = standby.snapshots().stream().mapToLong(s -> s.id()).max().orElse(0);
            for (Map.Entry<Long, Long> m : Standby.snapshots(target).entrySet()) {
                Map<String, TreeMap<String, byte[]>> model = models.get(m.getKey());
                assertTrue(m.getValue() <= latestLocal, "map line " + m + " names a snapshot the standby never declared (latest " + latestLocal + ")");
                if (model == null) continue; // the image's own snapshot
                try (SnapshotView v = standby.asOf(m.getValue())) {
                    StoreAssert.assertTablesEqual(model, v.tables(), v::table, "standby as of sender snapshot " + m.getKey());
                }
                compared++;
            }
        }
        assertTrue(compared >= 3, "snapshots compared: " + compared);
    }
}
