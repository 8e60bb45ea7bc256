package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A follow whose stream falls silent after the image (here a proxy that stops passing the sender's bytes on, as a
 * paused receiver or a dead link would look): it ends with the idle timeout, saying that nothing arrived while
 * following and that the standby holds what did — not that the target stays unfinished — and the standby opens; a
 * second follow into it is refused as a resume, which follow mode cannot do.
 */
@Timeout(120)
class FollowSilenceTest {
    @TempDir
    Path dir;

    /** Passes bytes both ways between one client and the server until {@link #silence}, after which the server's go nowhere. */
    private static final class SilencingProxy implements AutoCloseable {
        final ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        volatile boolean silent;
        private Socket client;
        private Socket server;

        SilencingProxy(InetSocketAddress upstream) throws IOException {
            Thread t = new Thread(() -> {
                try {
                    client = listener.accept();
                    server = new Socket(upstream.getAddress(), upstream.getPort());
                    pump(client.getInputStream(), server.getOutputStream(), false);
                    pump(server.getInputStream(), client.getOutputStream(), true);
                } catch (IOException ignored) {
                    // closed by the test
                }
            }, "silencing-proxy");
            t.setDaemon(true);
            t.start();
        }

        private void pump(InputStream in, OutputStream out, boolean silenceable) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[64 << 10];
                try {
                    for (int n; (n = in.read(buf)) >= 0; ) if (!(silenceable && silent)) out.write(buf, 0, n);
                } catch (IOException ignored) {
                    // a side closed
                }
            }, "silencing-proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        InetSocketAddress address() {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            listener.close();
            if (client != null) client.close();
            if (server != null) server.close();
        }
    }

    @Test
    void aStreamSilentAfterTheImageEndsTheFollowWithTheStandbyKept() throws Exception {
        Path target = dir.resolve("standby");
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true));
             SilencingProxy proxy = new SilencingProxy(server.address())) {
            Workload w = new Workload(5, 500);
            w.createTables(store);
            for (int i = 0; i < 500; i++) w.step(store);
            ImageInPlace imageIn = new ImageInPlace();
            SnapshotBackup follow = new SnapshotBackup(proxy.address(), 1, target).follow(true).idleTimeout(Duration.ofSeconds(3))
                    .progress(imageIn);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            assertTrue(imageIn.await(Duration.ofSeconds(60)), "image in place");
            proxy.silent = true;
            ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(60, TimeUnit.SECONDS));
            assertInstanceOf(BackupException.class, e.getCause());
            String m = e.getCause().getMessage();
            assertTrue(m.contains("nothing arrived from the sender for 3 s while following") && m.contains("holds everything up to sender snapshot"), m);
            assertFalse(m.contains("unfinished"), m);
        }
        assertTrue(Files.exists(target.resolve(Standby.SNAPSHOT_MAP)));
        try (Varve standby = Varve.open(SmallStore.config(target).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build())) {
            assertFalse(standby.snapshots().isEmpty(), "the standby opens with the image's snapshot");
        }
        // following again into it says that a follow is not resumed, rather than that the directory is not empty
        IllegalArgumentException again = assertThrows(IllegalArgumentException.class,
                () -> new SnapshotBackup(new InetSocketAddress("127.0.0.1", 1), 1, target).follow(true).run());
        assertTrue(again.getMessage().contains("holds the standby of an earlier follow, which cannot be resumed"), again.getMessage());
    }
}
