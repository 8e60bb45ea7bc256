package dev.varve.server;

import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The server's shipping figures on {@code /metrics} and {@code /api/metrics} follow what its connections do: a backup
 * sent whole, one whose receiver went mid-image, a follow stream while it sends changes and after it stops.
 */
@Timeout(120)
class ShipMetricsTest {
    @TempDir
    Path dir;

    @Test
    void imagesSentAndFailedAndFollowStreamsAreCounted() throws Exception {
        try (Varve store = Varve.open(SmallStore.fresh(dir.resolve("source")).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            HttpProbe http = new HttpProbe(server.address());
            Table t = store.table("t");
            byte[] value = new byte[4000];
            for (int i = 0; i < 10_000; i++) t.put(("k" + i).getBytes(StandardCharsets.UTF_8), value); // 40 MB: past what the socket and the write buffer hold
            long id = store.snapshotNow();
            assertEquals(Map.of("imagesInProgress", 0L, "imagesSent", 0L, "imagesFailed", 0L, "pageBytesSent", 0L, "followers", 0L,
                    "changeBytesSent", 0L), shipping(http));

            BackupResult backup = new SnapshotBackup(server.address(), id, dir.resolve("backup")).run();
            Map<String, Long> s = shipping(http);
            assertEquals(1L, s.get("imagesSent"));
            assertEquals(0L, s.get("imagesFailed"));
            assertEquals(0L, s.get("imagesInProgress"));
            assertEquals(backup.bytes(), s.get("pageBytesSent"), "the pages the receiver took");

            try (Socket receiver = new Socket()) { // asks for the image, reads a little of it, and goes
                receiver.setReceiveBufferSize(64 << 10); // fixed, not grown by the kernel: the sender stalls well before the image's end
                receiver.connect(server.address(), 5_000);
                receiver.getOutputStream().write(ShipProtocol.MAGIC);
                receiver.getOutputStream().write(FakeSender.frameBytes(ShipProtocol.HELLO, h -> h.writeInt(ShipProtocol.VERSION).writeLong(id).writeInt(0)));
                InputStream in = receiver.getInputStream();
                assertEquals(64 << 10, in.readNBytes(64 << 10).length);
                await(http, m -> m.get("imagesInProgress") == 1, "the cut transfer under way");
            }
            await(http, m -> m.get("imagesFailed") == 1 && m.get("imagesInProgress") == 0, "the cut transfer failed");
            assertEquals(1L, shipping(http).get("imagesSent"));

            ImageInPlace imageIn = new ImageInPlace();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, dir.resolve("standby")).follow(true).progress(imageIn);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            assertTrue(imageIn.await(Duration.ofSeconds(60)), "the follow's image in place");
            await(http, m -> m.get("followers") == 1 && m.get("imagesSent") == 2, "a follower, its image sent");
            long changeBytes = shipping(http).get("changeBytesSent");
            t.put("after".getBytes(StandardCharsets.UTF_8), value);
            await(http, m -> m.get("changeBytesSent") > changeBytes + value.length, "the change sent");
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
            await(http, m -> m.get("followers") == 0, "the follow stream ended");

            Map<String, Long> json = shipping(http);
            Map<String, Double> prometheus = PrometheusParser.parse(http.get("/metrics").body());
            assertEquals(json.get("imagesInProgress").doubleValue(), prometheus.get("varve_ship_images_in_progress"));
            assertEquals(json.get("imagesSent").doubleValue(), prometheus.get("varve_ship_images_sent_total"));
            assertEquals(json.get("imagesFailed").doubleValue(), prometheus.get("varve_ship_images_failed_total"));
            assertEquals(json.get("pageBytesSent").doubleValue(), prometheus.get("varve_ship_page_bytes_total"));
            assertEquals(json.get("followers").doubleValue(), prometheus.get("varve_ship_followers"));
            assertEquals(json.get("changeBytesSent").doubleValue(), prometheus.get("varve_ship_change_bytes_total"));
        }
    }

    /** The {@code shipping} object of {@code /api/metrics}. */
    @SuppressWarnings("unchecked")
    private static Map<String, Long> shipping(HttpProbe http) throws Exception {
        Map<String, Object> m = (Map<String, Object>) HttpProbe.json(http.get("/api/metrics")).get("shipping");
        Map<String, Long> out = new java.util.HashMap<>();
        m.forEach((k, v) -> out.put(k, ((Number) v).longValue()));
        return out;
    }

    private static void await(HttpProbe http, Predicate<Map<String, Long>> until, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Map<String, Long> m;
        while (!until.test(m = shipping(http))) {
            assertTrue(System.nanoTime() < deadline, what + ": " + m);
            Thread.sleep(20);
        }
    }
}
