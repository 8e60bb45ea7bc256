package dev.varve.server;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The archive's dead-byte count is the one figure the server reads from the files (every archived record's header).
 * When that read fails, the scrape still answers with every other figure and the count as unknown: it used to answer
 * 500 on every scrape, so the monitoring lost the whole store (its {@code varve_failed} too) over one optional figure.
 */
@Timeout(120)
class MetricsWhenArchiveReadsFailTest {
    @TempDir
    Path dir;

    @Test
    void aFailedDeadBytesMeasurementLeavesTheOtherFiguresServed() throws Exception {
        FailingArchiveReadsIO io = new FailingArchiveReadsIO();
        VarveConfig config = SmallStore.fresh(dir).checkpointFrequency(Duration.ofHours(1)).build();
        try (Varve store = Varve.open(config, io)) {
            Table t = store.table("t");
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 200; i++) t.put(("k" + i).getBytes(StandardCharsets.UTF_8), new byte[100]);
                store.snapshotNow();
            }
            store.checkpoint().join(); // archived pre-states on disk: the dead-byte walk reads their headers
            assertTrue(store.metrics().archiveBytes() > 0);
            try (VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0),
                    new ServerOptions().deadBytesInterval(Duration.ofNanos(1)))) { // measured again at every scrape
                HttpProbe http = new HttpProbe(server.address());
                assertEquals(0.0, PrometheusParser.parse(http.get("/metrics").body()).get("varve_archive_dead_bytes"));

                io.failing.set(true);
                HttpResponse<String> r = http.get("/metrics");
                assertEquals(200, r.statusCode(), r.body());
                Map<String, Double> parsed = PrometheusParser.parse(r.body());
                assertTrue(Double.isNaN(parsed.get("varve_archive_dead_bytes")), "unknown, not a stale or made-up count: " + parsed);
                assertEquals((double) store.metrics().writes(), parsed.get("varve_writes_total"));
                assertEquals(0.0, parsed.get("varve_failed"), "the store itself is sound");
                HttpResponse<String> json = http.get("/api/metrics");
                assertEquals(200, json.statusCode(), json.body());
                Map<String, Object> figures = HttpProbe.json(json);
                assertTrue(figures.containsKey("archiveDeadBytes"));
                assertNull(figures.get("archiveDeadBytes"));

                io.failing.set(false); // the disk is back: the next measurement counts again
                assertEquals(0.0, PrometheusParser.parse(http.get("/metrics").body()).get("varve_archive_dead_bytes"));
            }
        }
    }
}
