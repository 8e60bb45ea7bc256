package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link VarveServer#close} while transfers and follows are being set up and run: every receiver learns that the
 * connection closed (not by waiting out its idle timeout), its target stays unfinished or complete (or is removed
 * again, closed before a frame was written), once close returns no shipping thread is left to read the store, and
 * nothing is logged as an error on the way.
 */
@Timeout(300)
@Isolated("swaps System.err to read the log, and counts every shipping thread of the JVM: another class's server has some")
class ServerCloseTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 0);

    @TempDir
    Path dir;

    @Test
    void closingTheServerClosesEveryConnectionAndStopsTheShippingThreads() throws Exception {
        PrintStream err = System.err;
        ByteArrayOutputStream logged = new ByteArrayOutputStream(); // slf4j-simple writes to System.err as it is at each line
        System.setErr(new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                err.write(b);
                synchronized (logged) {
                    logged.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                err.write(b, off, len);
                synchronized (logged) {
                    logged.write(b, off, len);
                }
            }
        }, true));
        try {
            closeDuringTransfers();
        } finally {
            System.setErr(err);
        }
        synchronized (logged) {
            // a shipping thread's write to its closed connection completed on an event loop already stopped
            assertFalse(logged.toString().contains("ERROR io.netty"), "close logged Netty errors:\n" + logged);
        }
    }

    private void closeDuringTransfers() throws Exception {
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            // 1,000 keys and steps: an image of about 1,400 pages, which the 12 rounds' closes (0 to 165 ms in) cut while
            // connecting, at HELLO, in the image and, in about half the rounds, in the follow stream after it (2,000
            // steps doubled the image and the time each round's transfers took, and left the follow to two rounds)
            Workload w = new Workload(3, 1000);
            w.createTables(store);
            for (int i = 0; i < 1000; i++) w.step(store);
            long id = store.snapshotNow(3);
            for (int round = 0; round < 12; round++) {
                VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true));
                List<CompletableFuture<Object>> runs = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    // the idle timeout is the receiver's last resort: a receiver that needs it was never told the connection closed
                    SnapshotBackup b = new SnapshotBackup(server.address(), id, dir.resolve("r" + round + "-" + i)).follow(i == 2)
                            .idleTimeout(Duration.ofSeconds(20));
                    runs.add(CompletableFuture.supplyAsync(() -> {
                        try {
                            return b.run();
                        } catch (BackupException e) {
                            return e;
                        }
                    }));
                }
                // close at a different point of the transfers' lives each round: connecting, HELLO, image, follow
                Thread.sleep(round * 15L);
                server.close();
                for (Thread t : Thread.getAllStackTraces().keySet())
                    assertFalse(t.isAlive() && t.getName().startsWith("varve-server-ship"), "round " + round + ": " + t.getName() + " runs after close()");
                for (int i = 0; i < 3; i++) {
                    Object r = runs.get(i).get(120, TimeUnit.SECONDS);
                    Path target = dir.resolve("r" + round + "-" + i);
                    if (r instanceof BackupResult) {
                        assertTrue(i < 2, "a follow only ends with an error when the server closes");
                        assertEquals(id, ((BackupResult) r).snapshotId());
                        StoreAssert.assertStoreEquals(w.snapshot(), target);
                        continue;
                    }
                    String m = ((BackupException) r).getMessage();
                    if (m.contains("sent nothing")) fail("round " + round + ", transfer " + i + " was never told the connection closed: " + m);
                    assertTrue(m.contains("cannot connect") || m.contains("closed") || m.contains("ended") || m.contains("Connection reset"), m);
                    if (m.contains("nothing of the image was written")) assertFalse(Files.exists(target), m); // closed before a frame was written: removed
                    else if (i < 2 || m.contains("before the image was complete")) StoreAssert.assertRefusesToOpen(target);
                }
            }
        }
    }

    /** The sender's store closed under a follow (its server still up): the standby is told, not fed heartbeats forever. */
    @Test
    void aFollowWhoseStoreClosesEndsWithTheReasonAndTheStandbyOpens() throws Exception {
        Path target = dir.resolve("standby");
        Workload w = new Workload(8, 500);
        Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.WAL_PHYSICAL));
        try (VarveServer server = VarveServer.start(store, LOOPBACK, new ServerOptions().allowWrites(true))) {
            w.createTables(store);
            for (int i = 0; i < 500; i++) w.step(store);
            java.util.concurrent.CountDownLatch imageIn = new java.util.concurrent.CountDownLatch(1);
            ShipProgress held = new ShipProgress() {
                @Override
                public void received(long pages, long imagePages, long bytes) {
                }

                @Override
                public void imageComplete(BackupResult image) {
                    imageIn.countDown();
                }
            };
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, target).follow(true).progress(held);
            CompletableFuture<Object> run = CompletableFuture.supplyAsync(() -> {
                try {
                    return follow.run();
                } catch (BackupException e) {
                    return e;
                }
            });
            assertTrue(imageIn.await(60, TimeUnit.SECONDS), "image in place");
            for (int i = 0; i < 300; i++) w.step(store);
            store.close();
            Object r;
            try {
                r = run.get(60, TimeUnit.SECONDS); // the sender beats every second: a minute of them means it never noticed
            } catch (java.util.concurrent.TimeoutException e) {
                follow.stop();
                throw new AssertionError("the follow was never told the sender's store closed", e);
            }
            assertTrue(r instanceof BackupException, String.valueOf(r));
            assertTrue(((BackupException) r).getMessage().contains("store was closed"), ((BackupException) r).getMessage());
        } finally {
            store.close();
        }
        // everything the sender committed before it closed was queued, and goes out ahead of the error
        StoreAssert.assertStoreEquals(w.snapshot(), target);
    }
}
