package dev.varve.server;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Snapshot shipping on loopback from a store that keeps writing. */
@Timeout(180)
class ShippingTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);

    @TempDir
    Path dir;

    /**
     * The sender stores of the shipping tests (in this JVM and in {@link SenderFixture}'s child JVMs). A new store
     * zero-fills its data region, checkpoint buffer and capture buffer in direct memory and writes two WAL segments of
     * zeros: with the default buffers and segments that was 272 MiB for each of the module's 60-odd sender stores.
     * These hold the tests' 30 MiB at most; a full buffer makes the writer wait, it loses nothing. A store received
     * from one of these is made by SnapshotBackup with its own (default) segment size: open it with {@link SmallStore}.
     */
    static VarveConfig config(Path dir, RecoveryMode mode) {
        return VarveConfig.builder().path(dir).recoveryMode(mode).dataRegionSize(64L << 20).checkpointBufferSize(4L << 20)
                .captureBufferSize(4L << 20).walSegmentSize(8L << 20).checkpointFrequency(Duration.ofSeconds(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(2), Retention.keepAll())).build();
    }

    /**
     * A writer declares snapshots of ranks 1, 2 and 3 (and later ones that push the first out of level 1), keeping a
     * model of each, and never stops writing; each retained snapshot is shipped meanwhile and must equal its model.
     */
    @Test
    @Timeout(180)
    void receivedStoreEqualsTheSnapshotWhileTheSenderKeepsWriting() throws Exception {
        Map<Long, Map<String, TreeMap<String, byte[]>>> models = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        CountDownLatch declared = new CountDownLatch(1);
        long[] wantedSnapshots = new long[3];
        try (Varve store = Varve.open(config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            Workload w = new Workload(42, 3000);
            w.createTables(store);
            Thread writer = new Thread(() -> {
                try {
                    int[] ranks = {1, 2, 3, 1, 1};
                    for (int i = 0; i < ranks.length; i++) {
                        for (int s = 0; s < 1500; s++) w.step(store);
                        long id = store.snapshotNow(ranks[i]);
                        models.put(id, w.snapshot());
                        if (i < 3) wantedSnapshots[i] = id;
                    }
                    declared.countDown();
                    while (!stop.get()) w.step(store);
                } catch (Throwable t) {
                    writerFailure.set(t);
                    declared.countDown();
                }
            }, "writer");
            writer.start();
            assertTrue(declared.await(120, TimeUnit.SECONDS));
            // keepLast(2) at level 1 has dropped snapshot 1's level-1 life, but rank 2 and 3 keep 2 and 3 alive
            List<Long> shipped = new ArrayList<>();
            for (long id : new long[]{wantedSnapshots[1], wantedSnapshots[2], models.keySet().stream().max(Long::compare).orElseThrow()}) {
                Path target = dir.resolve("backup-" + id);
                long writesBefore = store.metrics().writes();
                BackupResult r = new SnapshotBackup(server.address(), id, target).run();
                assertTrue(store.metrics().writes() > writesBefore, "the writer kept writing during the transfer");
                assertEquals(id, r.snapshotId());
                long entries = StoreAssert.assertStoreEquals(models.get(id), target);
                assertEquals(entries, r.entries());
                shipped.add(id);
            }
            stop.set(true);
            writer.join(30_000);
            if (writerFailure.get() != null) throw new AssertionError("writer failed", writerFailure.get());
            assertEquals(3, shipped.size());
        }
    }

    @Test
    @Timeout(60)
    void unknownSnapshotIsRefusedLeavingNoTargetAndARerunCompletes() {
        try (Varve store = Varve.open(config(dir.resolve("source"), RecoveryMode.WAL_PHYSICAL), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            Workload w = new Workload(7, 200);
            w.createTables(store);
            for (int i = 0; i < 300; i++) w.step(store);
            long id = store.snapshotNow();
            Path target = dir.resolve("backup");
            BackupException e = assertThrows(BackupException.class, () -> new SnapshotBackup(server.address(), id + 5, target).run());
            assertTrue(e.getMessage().contains("never declared") && e.getMessage().contains("which this backup created, was removed"), e.getMessage());
            assertFalse(Files.exists(target), "a refused backup leaves no directory it created");
            new SnapshotBackup(server.address(), id, target).run();
            StoreAssert.assertStoreEquals(w.snapshot(), target);
            // a finished store is never overwritten
            IllegalArgumentException again = assertThrows(IllegalArgumentException.class, () -> new SnapshotBackup(server.address(), id, target).run());
            assertTrue(again.getMessage().contains("not empty"), again.getMessage());
        }
    }

    @Test
    @Timeout(60)
    void droppedSnapshotIsRefusedWithTheReason() {
        try (Varve store = Varve.open(config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            store.table("t").put(new byte[]{1}, new byte[]{2});
            long first = store.snapshotNow();
            store.snapshotNow();
            store.snapshotNow(); // level 1 keeps the last 2: the first is dropped
            BackupException e = assertThrows(BackupException.class, () -> new SnapshotBackup(server.address(), first, dir.resolve("b")).run());
            assertTrue(e.getMessage().contains("dropped"), e.getMessage());
        }
    }

    @Test
    @Timeout(30)
    void nothingListeningIsAClearFailure() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        InetSocketAddress nobody = new InetSocketAddress("127.0.0.1", port);
        BackupException e = assertThrows(BackupException.class, () -> new SnapshotBackup(nobody, 1, dir.resolve("b")).run());
        assertTrue(e.getMessage().contains("cannot connect") && e.getMessage().contains("which this backup created, was removed"), e.getMessage());
        assertFalse(Files.exists(dir.resolve("b")), "a backup that received nothing leaves no directory it created");

        Path empty = Files.createDirectory(dir.resolve("empty"));
        e = assertThrows(BackupException.class, () -> new SnapshotBackup(nobody, 1, empty).run());
        assertTrue(e.getMessage().contains("nothing of the image was written, so " + empty + " was left as it was before"), e.getMessage());
        try (java.util.stream.Stream<Path> left = Files.list(empty)) {
            assertEquals(List.of(), left.toList(), "an empty directory that was there stays as it was");
        }
    }

    @Test
    @Timeout(30)
    void aPeerSpeakingHttpIsNamedAsNotAVarveServer() throws Exception {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Thread web = new Thread(() -> { // answers whatever comes the way a web server would, then closes
                try (java.net.Socket c = s.accept()) {
                    c.getOutputStream().write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                } catch (java.io.IOException ignored) {
                    // the backup gave up first
                }
            });
            web.start();
            BackupException e = assertThrows(BackupException.class,
                    () -> new SnapshotBackup(new InetSocketAddress("127.0.0.1", s.getLocalPort()), 1, dir.resolve("b")).run());
            assertTrue(e.getMessage().contains("does not speak Varve's shipping protocol") && e.getMessage().contains("\"HTTP\""), e.getMessage());
            web.join(10_000);
        }
    }

    @Test
    void badArgumentsAreRejectedUpFront() {
        InetSocketAddress a = new InetSocketAddress("127.0.0.1", 1);
        assertThrows(IllegalArgumentException.class, () -> new SnapshotBackup(a, 0, dir));
        assertThrows(NullPointerException.class, () -> new SnapshotBackup(a, 1, null));
        assertThrows(IllegalArgumentException.class, () -> new SnapshotBackup(a, 1, dir).idleTimeout(Duration.ZERO));
        // the idle handler counts milliseconds: under 1 ms was 0 there, which is no timeout at all, and FOREVER overflowed
        // (ArithmeticException) inside the connection's setup, after run() had marked the target an unfinished transfer
        for (Duration bad : new Duration[]{Duration.ofNanos(500_000), java.time.temporal.ChronoUnit.FOREVER.getDuration()}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new SnapshotBackup(a, 1, dir).idleTimeout(bad));
            assertTrue(e.getMessage().startsWith("idleTimeout "), e.getMessage());
        }
        new SnapshotBackup(a, 1, dir).idleTimeout(Duration.ofMillis(1)).idleTimeout(ServerOptions.MAX_DURATION);
    }

    /**
     * A receiver of an earlier protocol version (3: follow frames without sequence numbers, an END digest without the
     * page CRCs) is refused at its HELLO, with an ERROR naming both versions, before anything is shipped.
     */
    @Test
    void aReceiverOfAnotherVersionIsRefusedNamingBothVersions() throws Exception {
        try (Varve store = Varve.open(config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, LOOPBACK)) {
            long id = store.snapshotNow();
            assertEquals("shipping protocol version 3 is not supported (this server speaks 4)", refusalOfHello(server, 3, id));
            // the version is unsigned on the wire: a garbled one is named as sent, not as a negative number
            assertEquals("shipping protocol version 4294967295 is not supported (this server speaks 4)", refusalOfHello(server, -1, id));
        }
    }

    private static String refusalOfHello(VarveServer server, int version, long id) throws Exception {
        try (java.net.Socket socket = new java.net.Socket(server.address().getAddress(), server.address().getPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(ShipProtocol.MAGIC);
            socket.getOutputStream().write(FakeSender.frameBytes(ShipProtocol.HELLO, h -> h.writeInt(version).writeLong(id).writeInt(0)));
            java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
            int length = in.readInt();
            assertEquals(ShipProtocol.ERROR, in.readByte());
            byte[] message = new byte[in.readUnsignedShort()];
            in.readFully(message);
            assertEquals(1 + 2 + message.length + 4, length);
            return new String(message, java.nio.charset.StandardCharsets.UTF_8);
        }
    }
}
