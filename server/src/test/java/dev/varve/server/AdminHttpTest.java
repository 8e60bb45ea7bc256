package dev.varve.server;

import dev.varve.engine.CheckpointStats;
import dev.varve.engine.TableOptions;
import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin endpoint over a real socket: Prometheus text through a real parser, the JSON API, hostile requests. */
@Timeout(120)
class AdminHttpTest {
    @TempDir
    Path dir;
    private Varve store;
    private VarveServer server;
    private HttpProbe http;
    private long first;
    private long second;

    @BeforeEach
    void start() {
        store = Varve.open(SmallStore.config(dir).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(1), Retention.keepAll())).build());
        store.table("accounts").put(bytes("alice"), bytes("10"));
        first = store.snapshotNow(2);
        store.table("accounts").put(bytes("alice"), bytes("20"));
        store.table("orders").put(bytes("o1"), new byte[10_000]);
        second = store.snapshotNow(1);
        store.snapshotNow(1); // level 1 keeps the last one: `second` is dropped, `first` lives on at level 2
        store.table("accounts").put(bytes("bob"), bytes("5"));
        store.checkpoint().join();
        server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions()
                .requestTimeout(Duration.ofSeconds(1)).idleTimeout(Duration.ofSeconds(2)).sampleInterval(Duration.ofMillis(100)));
        http = new HttpProbe(server.address());
    }

    @AfterEach
    void stop() {
        if (server != null) server.close();
        if (store != null) store.close();
    }

    @Test
    void metricsAreValidPrometheusTextAndMatchTheStoresFigures() throws Exception {
        HttpResponse<String> r = http.get("/metrics");
        assertEquals(200, r.statusCode());
        assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/plain; version=0.0.4"));
        Map<String, Double> parsed = PrometheusParser.parse(r.body());
        VarveMetrics m = store.metrics(); // the store is idle: nothing moves between the scrape and this read
        CheckpointStats c = m.lastCheckpoint();
        Map<String, Double> expected = new HashMap<>();
        expected.put("varve_wal_bytes_written_total", (double) m.walBytesWritten());
        expected.put("varve_recovery_file_bytes_written_total", (double) m.recoveryFileBytesWritten());
        expected.put("varve_checkpoints_completed_total", (double) m.checkpointsCompleted());
        expected.put("varve_checkpoint_pages_written_total", (double) m.checkpointPagesWritten());
        expected.put("varve_throttled_seconds_total", m.throttledNanos() / 1e9);
        expected.put("varve_archive_bytes", (double) m.archiveBytes());
        expected.put("varve_archive_reclaimed_bytes_total", (double) m.archiveBytesReclaimed());
        long[] levels = m.archiveBytesPerLevel();
        for (int i = 0; i < levels.length; i++) expected.put("varve_archive_level_bytes{level=\"" + (i + 1) + "\"}", (double) levels[i]);
        expected.put("varve_archive_dead_bytes", (double) m.archiveDeadBytes());
        expected.put("varve_archive_ranking_copied_bytes_total", (double) m.archiveBytesCopiedByRanking());
        expected.put("varve_writes_total", (double) m.writes());
        expected.put("varve_reads_total", (double) m.reads());
        expected.put("varve_pages_read_total", (double) m.pagesRead());
        expected.put("varve_pages_evicted_total", (double) m.pagesEvicted());
        expected.put("varve_dirty_pages", (double) m.dirtyPages());
        expected.put("varve_copy_on_write_pages_total", (double) m.copyOnWritePages());
        expected.put("varve_checkpoint_buffer_used_pages", (double) m.checkpointBufferUsedPages());
        expected.put("varve_checkpoint_buffer_capacity_pages", (double) m.checkpointBufferPages());
        expected.put("varve_data_region_allocated_bytes", (double) m.dataRegionAllocatedBytes());
        expected.put("varve_snapshots_live", (double) store.snapshots().size());
        expected.put("varve_failed", 0.0);
        expected.put("varve_last_checkpoint_info{reason=\"" + c.reason() + "\",recovery_data=\"" + c.recoveryData() + "\"}", 1.0);
        expected.put("varve_last_checkpoint_id", (double) c.id());
        expected.put("varve_last_checkpoint_pages", (double) c.pages());
        expected.put("varve_last_checkpoint_recovery_data_bytes", (double) c.recoveryDataBytes());
        expected.put("varve_last_checkpoint_recovery_data_seconds", c.recoveryDataNanos() / 1e9);
        expected.put("varve_last_checkpoint_page_write_seconds", c.pageWriteNanos() / 1e9);
        expected.put("varve_last_checkpoint_fsync_seconds", c.fsyncNanos() / 1e9);
        expected.put("varve_last_checkpoint_lock_hold_seconds", c.lockHoldNanos() / 1e9);
        expected.put("varve_last_checkpoint_total_seconds", c.totalNanos() / 1e9);
        expected.put("varve_last_checkpoint_copy_on_write_pages", (double) c.copyOnWritePages());
        expected.put("varve_last_checkpoint_throttled_seconds", c.throttledNanos() / 1e9);
        expected.put("varve_last_checkpoint_wal_bytes", (double) c.walBytes());
        for (String ship : new String[]{"varve_ship_images_in_progress", "varve_ship_images_sent_total", "varve_ship_images_failed_total",
                "varve_ship_page_bytes_total", "varve_ship_followers", "varve_ship_change_bytes_total"})
            expected.put(ship, 0.0); // nothing shipped yet (ShipMetricsTest ships)
        for (Map.Entry<String, Double> e : expected.entrySet()) {
            assertTrue(parsed.containsKey(e.getKey()), "missing sample " + e.getKey() + " in " + parsed.keySet());
            assertEquals(e.getValue(), parsed.get(e.getKey()), 1e-9, e.getKey());
        }
        assertTrue(Double.isNaN(parsed.get("varve_archive_diff_compactness_ratio")), "no ranking copy yet: NaN");
        assertEquals(expected.size() + 1, parsed.size(), "every sample checked: " + parsed.keySet());
        assertTrue(c.id() > 0 && m.checkpointsCompleted() > 0 && m.walBytesWritten() > 0 && levels.length == 2);
    }

    @Test
    void eachCheckpointKeepsTheSameSeries() throws Exception {
        Set<String> before = PrometheusParser.parse(http.get("/metrics").body()).keySet();
        long id = store.metrics().lastCheckpoint().id();
        store.table("accounts").put(bytes("dave"), bytes("7"));
        store.checkpoint().join(); // the same reason and recovery data as the one before: only values may change
        assertTrue(store.metrics().lastCheckpoint().id() > id);
        Set<String> after = PrometheusParser.parse(http.get("/metrics").body()).keySet();
        assertEquals(before, after, "a label that changes with every checkpoint makes a new series each time (one every 30 s by default)");
    }

    @Test
    void jsonEndpointsReportSnapshotsTablesCheckpointsAndAsOfReads() throws Exception {
        Map<String, Object> snaps = HttpProbe.json(http.get("/api/snapshots"));
        List<?> live = (List<?>) snaps.get("live");
        assertEquals(2, live.size());
        assertEquals(first, ((Number) ((Map<?, ?>) live.get(0)).get("id")).longValue());
        assertEquals(2, ((Number) ((Map<?, ?>) live.get(0)).get("rank")).intValue());
        List<?> dropped = (List<?>) snaps.get("dropped");
        assertEquals(1, dropped.size());
        Map<?, ?> d = (Map<?, ?>) dropped.get(0);
        assertEquals(second, ((Number) d.get("id")).longValue());
        assertFalse(((String) d.get("why")).isBlank());

        Map<String, Object> tables = HttpProbe.json(http.get("/api/tables"));
        assertEquals(List.of("accounts", "orders"), ((List<?>) tables.get("tables")).stream().map(t -> ((Map<?, ?>) t).get("name")).toList());

        assertEquals("20", value(http.get("/api/get?table=accounts&key=alice")));
        assertEquals("10", value(http.get("/api/get?table=accounts&key=alice&asOf=" + first)));
        assertEquals("5", value(http.get("/api/get?table=accounts&keyHex=626f62")));
        HttpResponse<String> absentThen = http.get("/api/get?table=accounts&key=bob&asOf=" + first);
        assertEquals(404, absentThen.statusCode());
        assertEquals(false, HttpProbe.json(absentThen).get("found"));

        Map<String, Object> cps = HttpProbe.json(http.get("/api/checkpoints"));
        List<?> list = (List<?>) cps.get("checkpoints");
        assertFalse(list.isEmpty());
        assertEquals(store.metrics().lastCheckpoint().id(), ((Number) ((Map<?, ?>) list.get(list.size() - 1)).get("id")).longValue());
        Map<String, Object> metrics = HttpProbe.json(http.get("/api/metrics"));
        assertEquals(store.metrics().walBytesWritten(), ((Number) metrics.get("walBytesWritten")).longValue());
        assertFalse(((List<?>) HttpProbe.json(http.get("/api/series")).get("samples")).isEmpty());
        assertEquals(200, http.send("HEAD", "/api/tables").statusCode());
    }

    @Test
    void badRequestsGetA4xxWithAMessageAndNoStackTrace() throws Exception {
        Map<String, Integer> cases = new HashMap<>();
        cases.put("/nope", 404);
        cases.put("/../../etc/passwd", 404);
        cases.put("/api/get?table=accounts", 400);
        cases.put("/api/get?key=alice", 400);
        cases.put("/api/get?table=missing&key=a", 404);
        cases.put("/api/get?table=accounts&key=a&keyHex=61", 400);
        cases.put("/api/get?table=accounts&keyHex=zz", 400);
        cases.put("/api/get?table=accounts&key=alice&asOf=999", 404);
        cases.put("/api/get?table=accounts&key=alice&asOf=" + second, 404);
        cases.put("/api/get?table=accounts&key=alice&asOf=-1", 400);
        cases.put("/api/get?table=accounts&key=alice&asOf=x", 400);
        cases.put("/api/get?table=accounts&key=alice&asOf=1&asOf=2", 400);
        cases.put("/api/get?table=accounts&key=" + "k".repeat(2000), 400);
        StringBuilder many = new StringBuilder("/api/get?table=accounts&key=alice");
        for (int i = 0; i < 16; i++) many.append("&p").append(i).append("=x");
        cases.put(many + "&asOf=999", 400); // too many parameters: refused, not answered as of now with asOf dropped
        cases.put("/api/get?table=accounts&key=%ff%fe", 400); // not UTF-8: refused, not looked up as U+FFFD
        for (Map.Entry<String, Integer> c : cases.entrySet()) {
            HttpResponse<String> r = http.get(c.getKey());
            assertEquals(c.getValue(), r.statusCode(), c.getKey() + " -> " + r.body());
            String error = (String) HttpProbe.json(r).get("error");
            assertFalse(error == null || error.isBlank(), c.getKey());
            assertFalse(r.body().contains("\tat ") || r.body().contains("Exception"), c.getKey() + " leaks internals: " + r.body());
        }
        HttpResponse<String> dropped = http.get("/api/get?table=accounts&key=alice&asOf=" + second);
        assertTrue(((String) HttpProbe.json(dropped).get("error")).contains("dropped"));
        assertEquals(405, http.send("DELETE", "/api/tables").statusCode());
        assertEquals(403, http.send("POST", "/api/snapshots").statusCode());
        assertEquals(403, http.send("POST", "/api/rank?id=1&rank=2").statusCode());
        assertEquals(3, store.snapshots().size() + 1, "nothing was declared");
        assertEquals(List.of("accounts", "orders"), store.tables(), "no table was created by a read");
    }

    @Test
    void hostileClientsAreAnsweredOrCutWithoutHarmingTheStore() throws Exception {
        String hugeHeader = "GET /api/tables HTTP/1.1\r\nHost: localhost\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n";
        assertTrue(http.raw(ascii(hugeHeader), Duration.ofSeconds(10)).startsWith("HTTP/1.1 431"));
        String hugeLine = "GET /" + "a".repeat(10_000) + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
        assertTrue(http.raw(ascii(hugeLine), Duration.ofSeconds(10)).startsWith("HTTP/1.1 414"));
        String hugeBody = "POST /api/snapshots HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000\r\n\r\n" + "x".repeat(1000);
        String tooBig = http.raw(ascii(hugeBody), Duration.ofSeconds(10));
        assertTrue(tooBig.startsWith("HTTP/1.1 413") && tooBig.contains("request body over 65536 bytes") && !tooBig.contains("<timeout>"),
                "413 says why and closes: " + tooBig);
        assertTrue(http.raw(ascii("NOT HTTP AT ALL\r\n\r\n"), Duration.ofSeconds(10)).startsWith("HTTP/1.1 400"));
        String badEscape = http.raw(ascii("GET /api/get?table=accounts&key=%zz HTTP/1.1\r\nHost: localhost\r\n\r\n"), Duration.ofSeconds(10));
        assertTrue(badEscape.startsWith("HTTP/1.1 400") && !badEscape.contains("Exception"), badEscape);
        // a slow client trickling its request is cut at the request deadline (1 s here) with 408
        assertTrue(http.raw(ascii("GET /api/tab"), Duration.ofSeconds(10)).startsWith("HTTP/1.1 408"));
        // a silent client is closed at the idle timeout (2 s here)
        assertEquals("", http.raw(new byte[0], Duration.ofSeconds(10)));
        // the shipping magic followed by garbage: a frame too long to accept, answered with an error frame and closed
        byte[] badShip = new byte[64];
        System.arraycopy(ShipProtocol.MAGIC, 0, badShip, 0, 4);
        badShip[4] = 0x7f;
        String shipReply = http.raw(badShip, Duration.ofSeconds(10));
        assertFalse(shipReply.contains("<timeout>"), "closed, not left hanging: " + shipReply);
        // a frame with a bad CRC
        byte[] badCrc = {'V', 'R', 'V', 'S', 0, 0, 0, 9, ShipProtocol.HELLO, 0, 0, 0, 1, 0, 0, 0, 0};
        assertFalse(http.raw(badCrc, Duration.ofSeconds(10)).contains("<timeout>"));

        assertTrue(http.raw(ascii("GET /api/tables HTTP/9.9\r\nHost: localhost\r\n\r\n"), Duration.ofSeconds(10)).startsWith("HTTP/1.1 505"));
        String absolute = http.raw(ascii("GET http://127.0.0.1/api/tables HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), Duration.ofSeconds(10));
        assertTrue(absolute.startsWith("HTTP/1.1 200") && absolute.contains("accounts"), "absolute-form target: " + absolute);
        // pipelined requests on one connection are answered in order
        String pipelined = http.raw(ascii("GET /api/tables HTTP/1.1\r\nHost: localhost\r\n\r\nGET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n"
                + "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), Duration.ofSeconds(10));
        int ok = pipelined.indexOf("HTTP/1.1 200"), missing = pipelined.indexOf("HTTP/1.1 404");
        assertTrue(ok >= 0 && missing > ok, pipelined);

        assertEquals(200, http.get("/api/tables").statusCode(), "the server still serves");
        assertEquals("20", new String(store.table("accounts").get(bytes("alice")), StandardCharsets.UTF_8));
        store.table("accounts").put(bytes("carol"), bytes("1")); // and the store still writes
    }

    @Test
    void aSlowRequestAfterAKeptAliveOneIsCutAtTheDeadline() throws Exception {
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5_000);
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(ascii("GET /api/tables HTTP/1.1\r\nHost: localhost\r\n\r\n"));
            out.flush();
            byte[] buf = new byte[8192];
            String first = new String(buf, 0, in.read(buf), StandardCharsets.ISO_8859_1);
            assertTrue(first.startsWith("HTTP/1.1 200"), first);
            // the next request trickles in, a byte every 300 ms: never idle (2 s), but past the request deadline (1 s)
            s.setSoTimeout(300);
            StringBuilder reply = new StringBuilder();
            byte[] next = ascii("GET /api/tables HTTP/1.1\r\nHost: localhost\r\n\r\n");
            for (int i = 0; i < next.length && reply.indexOf("HTTP/1.1 408") < 0; i++) {
                try {
                    out.write(next[i]);
                    out.flush();
                    int n = in.read(buf);
                    if (n < 0) break;
                    reply.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                } catch (java.net.SocketTimeoutException quiet) {
                    // nothing yet: the next byte
                } catch (IOException closed) {
                    break;
                }
            }
            assertTrue(reply.toString().startsWith("HTTP/1.1 408"), "a trickled second request gets 408: " + reply);
        }
    }

    @Test
    void connectionsPastTheCapAreClosedAndSilentShippingClientsAreCut() throws Exception {
        try (VarveServer capped = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions()
                .maxConnections(3).idleTimeout(Duration.ofSeconds(2)))) {
            HttpProbe p = new HttpProbe(capped.address());
            List<Socket> held = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) { // the shipping magic and half a HELLO, then silence
                    Socket s = new Socket();
                    s.connect(capped.address(), 5_000);
                    s.getOutputStream().write(new byte[]{'V', 'R', 'V', 'S', 0, 0});
                    s.getOutputStream().flush();
                    held.add(s);
                }
                Thread.sleep(200); // accepted and counted
                String fourth = p.raw(ascii("GET /api/tables HTTP/1.1\r\nHost: localhost\r\n\r\n"), Duration.ofSeconds(1));
                assertTrue(fourth.isEmpty() || fourth.equals("<reset>"), "a fourth connection is closed unanswered: " + fourth);
                for (Socket s : held) { // cut at the idle timeout, as no HELLO came
                    s.setSoTimeout(10_000);
                    String reply = HttpProbe.readAll(s.getInputStream());
                    assertFalse(reply.contains("<timeout>"), "a silent shipping client is closed: " + reply);
                }
            } finally {
                for (Socket s : held) s.close();
            }
            for (int tries = 0; ; tries++) { // the slots are given back once the server has seen the closes
                try {
                    assertEquals(200, p.get("/api/tables").statusCode());
                    break;
                } catch (IOException refused) {
                    if (tries > 50) throw refused;
                    Thread.sleep(100);
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> new ServerOptions().maxConnections(0));
    }

    @Test
    void aShippingClientTricklingItsHelloIsCutAtTheDeadline() throws Exception {
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5_000);
            OutputStream out = s.getOutputStream();
            out.write(new byte[]{'V', 'R', 'V', 'S', 0, 0, 0x0f, (byte) 0xa0}); // a frame of 4000 bytes is announced
            out.flush();
            // then a byte every 250 ms: never idle (2 s here), but its HELLO is not in 2 s after the magic
            s.setSoTimeout(250);
            StringBuilder reply = new StringBuilder();
            byte[] buf = new byte[512];
            boolean closed = false;
            for (int i = 0; i < 80 && !closed; i++) {
                try {
                    out.write(1);
                    out.flush();
                    int n = s.getInputStream().read(buf);
                    if (n < 0) closed = true;
                    else reply.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
                } catch (java.net.SocketTimeoutException quiet) {
                    // nothing yet: the next byte
                } catch (IOException reset) {
                    closed = true;
                }
            }
            assertTrue(closed, "a trickled HELLO is cut, not served a byte at a time: " + reply);
            assertTrue(reply.toString().contains("no HELLO within 2 s"), "the error frame says why: " + reply);
        }
    }

    @Test
    void expectHeadersTheServerRefusesGetAMessageAndAClose() throws Exception {
        String tooBig = http.raw(ascii("POST /api/snapshots HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n"),
                Duration.ofSeconds(10));
        assertTrue(tooBig.startsWith("HTTP/1.1 413") && tooBig.contains("\"error\":\"request body over 65536 bytes\"") && !tooBig.contains("<timeout>"),
                "413 says why and closes: " + tooBig);
        String unknown = http.raw(ascii("POST /api/snapshots HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nExpect: teapot\r\n\r\n"),
                Duration.ofSeconds(10));
        assertTrue(unknown.startsWith("HTTP/1.1 417") && unknown.contains("100-continue only") && !unknown.contains("<timeout>"),
                "417 says why and closes: " + unknown);
        String small = http.raw(ascii("POST /api/snapshots HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
                + "Connection: close\r\n\r\nab"), Duration.ofSeconds(10));
        assertTrue(small.startsWith("HTTP/1.1 100") && small.contains("HTTP/1.1 403"), "a body within the limit still goes on: " + small);
    }

    @Test
    void rawNonAsciiBytesInTheRequestTargetAre400() throws Exception {
        byte[] line = "GET /api/get?table=accounts&key=\u00e9 HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.UTF_8);
        String reply = http.raw(line, Duration.ofSeconds(10));
        assertTrue(reply.startsWith("HTTP/1.1 400") && reply.contains("must be ASCII"), "not looked up as a double-encoded key: " + reply);
        store.table("accounts").put(bytes("\u00e9"), bytes("7"));
        assertEquals("7", value(http.get("/api/get?table=accounts&key=%C3%A9")), "the percent-encoded key is found");
        // U+FFFD is a character like any other when it comes UTF-8 encoded (only escapes that are not UTF-8 are refused)
        store.table("accounts").put(bytes("a\uFFFDb"), bytes("9"));
        assertEquals("9", value(http.get("/api/get?table=accounts&key=a%EF%BF%BDb")));
    }

    /**
     * A ';' is a character of the query, not a separator (RFC 3986; curl sends it as typed): {@code key=x;y} looked
     * up key "x" and answered with its value.
     */
    @Test
    void aSemicolonInAQueryValueIsPartOfTheValue() throws Exception {
        store.table("accounts").put(bytes("x"), bytes("not this one"));
        store.table("accounts").put(bytes("x;y"), bytes("8"));
        assertEquals("8", value(http.get("/api/get?table=accounts&key=x;y")));
        assertEquals("8", value(http.get("/api/get?table=accounts&key=x%3By")), "percent-encoded, as before");
    }

    /** A caller-placed table's keys are found in the partition the caller put them in; without one the answer says so. */
    @Test
    void aCallerPlacedTableIsReadThroughThePartitionGiven() throws Exception {
        store.table("grid", TableOptions.callerPlaced(4)).partition(2).put(bytes("k"), bytes("then"));
        long then = store.snapshotNow(2);
        store.table("grid").partition(2).put(bytes("k"), bytes("now"));
        assertEquals("now", value(http.get("/api/get?table=grid&key=k&partition=2")));
        assertEquals("then", value(http.get("/api/get?table=grid&key=k&partition=2&asOf=" + then)));
        assertEquals(404, http.get("/api/get?table=grid&key=k&partition=1").statusCode(), "not in another partition");
        for (String bad : List.of("/api/get?table=grid&key=k", "/api/get?table=grid&key=k&asOf=" + then, "/api/get?table=grid&key=k&partition=4",
                "/api/get?table=grid&key=k&partition=-1", "/api/get?table=grid&key=k&partition=x")) {
            HttpResponse<String> r = http.get(bad);
            assertEquals(400, r.statusCode(), bad + ": " + r.body());
            assertTrue(((String) HttpProbe.json(r).get("error")).contains("partition"), bad + ": " + r.body());
        }
        List<?> tables = (List<?>) HttpProbe.json(http.get("/api/tables")).get("tables");
        Map<?, ?> grid = tables.stream().map(t -> (Map<?, ?>) t).filter(t -> t.get("name").equals("grid")).findFirst().orElseThrow();
        assertEquals(true, grid.get("callerPlaced"), "grid is listed as caller-placed: " + tables);
    }

    /**
     * An answer of the routes, a 4xx among them (a key that is absent is a 404), keeps the connection: it was closed
     * after each, and requests pipelined behind one went unanswered.
     */
    @Test
    void pipelinedRequestsBehindA404AreAnswered() throws Exception {
        String replies = http.raw(ascii("GET /api/get?table=accounts&key=nobody HTTP/1.1\r\nHost: localhost\r\n\r\n"
                + "GET /api/get?table=accounts&key=bob&asOf=x HTTP/1.1\r\nHost: localhost\r\n\r\n"
                + "GET /api/get?table=accounts&key=alice HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), Duration.ofSeconds(10));
        int absent = replies.indexOf("HTTP/1.1 404"), bad = replies.indexOf("HTTP/1.1 400"), found = replies.indexOf("HTTP/1.1 200");
        assertTrue(absent >= 0 && bad > absent && found > bad, replies);
        assertFalse(replies.contains("<timeout>"), "closed after the last, which asked for it: " + replies);
    }

    @Test
    void writingEndpointsWorkOnlyWhenAllowed() throws Exception {
        try (VarveServer rw = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            HttpProbe p = new HttpProbe(rw.address());
            HttpResponse<String> r = p.send("POST", "/api/snapshots?rank=2");
            assertEquals(201, r.statusCode(), r.body());
            long id = ((Number) HttpProbe.json(r).get("id")).longValue();
            assertEquals(2, store.snapshots().stream().filter(s -> s.id() == id).findFirst().orElseThrow().rank());
            assertEquals(400, p.send("POST", "/api/snapshots?rank=9").statusCode());
            assertEquals(400, p.send("POST", "/api/rank?id=" + id + "&rank=1").statusCode(), "ranks only go up");
            assertEquals(404, p.send("POST", "/api/rank?id=999&rank=2").statusCode());
        }
    }

    @Test
    void serverRefusesNonLoopbackUnlessAllowedAndValidatesOptions() {
        assertThrows(IllegalArgumentException.class, () -> VarveServer.start(store, new InetSocketAddress("0.0.0.0", 0)));
        assertThrows(IllegalArgumentException.class, () -> VarveServer.start(store, InetSocketAddress.createUnresolved("localhost", 0)));
        assertThrows(IllegalArgumentException.class, () -> new ServerOptions().maxHeaderBytes(0));
        assertThrows(IllegalArgumentException.class, () -> new ServerOptions().idleTimeout(Duration.ZERO));
    }

    private static String value(HttpResponse<String> r) {
        assertEquals(200, r.statusCode(), r.body());
        return new String(Base64.getDecoder().decode((String) HttpProbe.json(r).get("valueBase64")), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
