package dev.varve.cli;

import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.engine.FixtureStores;
import dev.varve.engine.StoreInspector;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Varve;
import dev.varve.server.ChildJvm;
import dev.varve.server.ServerOptions;
import dev.varve.server.Standby;
import dev.varve.server.StoreAssert;
import dev.varve.server.VarveServer;
import dev.varve.server.Workload;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code varve serve} and {@code varve backup --from} as an operator runs them: the server in a child JVM stopped
 * with SIGTERM, a backup of a snapshot in this one, a follow in another child JVM.
 */
class CliNetworkTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(60)
    void badCommandLinesExit64AndSayWhy() {
        String to = dir.resolve("t").toString();
        assertUsage("either a store directory DIR or --from HOST:PORT", "backup", "--to", to);
        assertUsage("either a store directory DIR or --from HOST:PORT", "backup", dir.toString(), "--from", "127.0.0.1:1", "--as-of", "1", "--to", to);
        assertUsage("either --as-of ID or --follow", "backup", "--from", "127.0.0.1:1", "--to", to);
        assertUsage("either --as-of ID or --follow", "backup", "--from", "127.0.0.1:1", "--as-of", "1", "--follow", "--to", to);
        assertUsage("--from must be HOST:PORT", "backup", "--from", "nohost", "--as-of", "1", "--to", to);
        assertUsage("--from port must be 1..65535", "backup", "--from", "127.0.0.1:70000", "--as-of", "1", "--to", to);
        assertUsage("--follow, --recovery-mode and --retention need --from", "backup", dir.toString(), "--follow", "--to", to);
        assertUsage("--retention needs --follow", "backup", "--from", "127.0.0.1:1", "--as-of", "1", "--retention", "keepLast(3)", "--to", to);
        assertUsage("keepSome(3)", "backup", "--from", "127.0.0.1:1", "--follow", "--retention", "keepSome(3)", "--to", to);
        assertUsage("not with --from", "backup", "--from", "127.0.0.1:1", "--as-of", "1", "--config", "x.properties", "--to", to);
        assertUsage("--port must be 0..65535", "serve", dir.toString(), "--port", "70000");
        assertUsage("Unknown option: '--bogus'", "serve", dir.toString(), "--bogus");
        assertUsage("--allowed-host 'x:7070' is not a host name", "serve", dir.toString(), "--allowed-host", "x:7070");
    }

    /**
     * A serve that cannot start leaves the store as it was: it opened the store for writing — a crashed one recovered
     * and checkpointed — before it found the port taken or the address unresolvable; with --config it created a store
     * in a directory that held none and served that.
     */
    @Test
    @Timeout(120)
    void aRefusedServeChangesNothing() throws IOException {
        Path crashed = dir.resolve("crashed");
        FixtureStores.create(crashed, "midcheckpoint");
        Map<String, String> before = DirectoryFingerprint.of(crashed);
        try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CliRun r = CliRun.of("serve", crashed.toString(), "--port", String.valueOf(busy.getLocalPort()));
            assertEquals(Main.UNUSABLE, r.code(), r.toString());
            assertTrue(r.err().contains("cannot listen on"), r.toString());
        }
        assertUsage("not an address this host can resolve", "serve", crashed.toString(), "--bind", "no.such.host.invalid");
        assertEquals(before, DirectoryFingerprint.of(crashed));
        // a damaged policy record: serving under the keep-everything guess would write it over the store's own policy
        Path policy = crashed.resolve("archive").resolve("retention.policy");
        byte[] bytes = Files.readAllBytes(policy);
        bytes[bytes.length - 1] ^= 1;
        Files.write(policy, bytes);
        Map<String, String> damaged = DirectoryFingerprint.of(crashed);
        try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) { // were it not refused, it would fail here
            CliRun r = CliRun.of("serve", crashed.toString(), "--port", String.valueOf(busy.getLocalPort()));
            assertEquals(Main.UNUSABLE, r.code(), r.toString());
            assertTrue(r.err().contains("the recorded one is damaged") && r.err().contains("retention.policy") && r.err().contains("--config"), r.toString());
        }
        assertEquals(damaged, DirectoryFingerprint.of(crashed));
        Path empty = Files.createDirectories(dir.resolve("empty"));
        Path config = Files.writeString(dir.resolve("store.properties"), "varve.pageSize=4096\n");
        assertUsage("holds no Varve store", "serve", empty.toString(), "--config", config.toString());
        try (Stream<Path> l = Files.list(empty)) {
            assertEquals(0, l.count(), "serve created nothing");
        }
    }

    /**
     * A backup that fails before anything arrived removes the target it created, as a local backup that fails does:
     * it left {@code .incoming/} and {@code varve.lock} behind, a directory that refused to open over nothing. A
     * directory that was there before stays, as it was.
     */
    @Test
    @Timeout(60)
    void nothingListeningFailsWithExit2AndRemovesTheTargetItCreated() throws IOException {
        Path target = dir.resolve("t");
        CliRun r = CliRun.of("backup", "--from", "127.0.0.1:1", "--as-of", "1", "--to", target.toString());
        assertEquals(Main.UNUSABLE, r.code(), r.toString());
        assertTrue(r.err().contains("cannot connect to") && r.err().contains("which this backup created, was removed"), r.toString());
        assertFalse(Files.exists(target), "the failed backup left " + target);
        Path existing = Files.createDirectories(dir.resolve("existing"));
        r = CliRun.of("backup", "--from", "127.0.0.1:1", "--as-of", "1", "--to", existing.toString());
        assertEquals(Main.UNUSABLE, r.code(), r.toString());
        try (Stream<Path> l = Files.list(existing)) {
            assertEquals(0, l.count(), "the directory that was there is left empty, as it was");
        }
    }

    /** A snapshot the server does not have: refused before a page is sent, and the target this run created is removed. */
    @Test
    @Timeout(120)
    void anUnknownSnapshotFailsWithExit2AndRemovesTheTargetItCreated() {
        Path source = dir.resolve("source");
        Path target = dir.resolve("unknown");
        try (Varve store = Varve.open(SmallStore.fresh(source).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            store.table("t").put(new byte[]{1}, new byte[]{2});
            long id = store.snapshotNow();
            String at = server.address().getHostString() + ":" + server.address().getPort();
            CliRun r = CliRun.of("backup", "--from", at, "--as-of", Long.toString(id + 998), "--to", target.toString());
            assertEquals(Main.UNUSABLE, r.code(), r.toString());
            assertTrue(r.err().contains("the sender refused") && r.err().contains("was removed"), r.toString());
            assertFalse(Files.exists(target), "the failed backup left " + target);
            r = CliRun.of("backup", "--from", at, "--as-of", Long.toString(id), "--to", target.toString());
            assertEquals(Main.OK, r.code(), r.toString());
        }
    }

    @Test
    @Timeout(240)
    void serveInOneProcessBackUpAndFollowFromOthers() throws Exception {
        Path source = dir.resolve("source");
        Workload w = new Workload(3, 500);
        long id;
        try (Varve store = Varve.open(SmallStore.fresh(source).build())) {
            w.createTables(store);
            for (int i = 0; i < 600; i++) w.step(store);
            id = store.snapshotNow();
        }
        Map<String, TreeMap<String, byte[]>> model = w.snapshot();
        Path copy = dir.resolve("copy");
        Path standby = dir.resolve("standby");
        long declared;
        try (ChildJvm server = ChildJvm.start(Main.class, "serve", source.toString(), "--port", "0", "--allow-writes",
                "--allowed-host", "grid-admin.internal")) {
            String line = server.awaitLine("serving", 120);
            assertTrue(line.endsWith("(writes allowed)"), line);
            String at = "127.0.0.1:" + line.replaceAll(".*:(\\d+) .*", "$1");
            HttpClient http = HttpClient.newHttpClient();
            assertEquals(200, http.send(HttpRequest.newBuilder(URI.create("http://" + at + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).statusCode());
            assertTrue(statusLine(at, "grid-admin.internal:80").endsWith(" 200 OK"), "a name given with --allowed-host is served");
            assertTrue(statusLine(at, "evil.example").endsWith(" 403 Forbidden"), "another name is refused (DNS rebinding)");

            CliRun backup = CliRun.of("backup", "--from", at, "--as-of", Long.toString(id), "--to", copy.toString());
            assertEquals(Main.OK, backup.code(), backup.toString());
            assertTrue(backup.out().contains("asOf: " + id), backup.out());
            assertTrue(backup.out().contains("entries: " + model.values().stream().mapToInt(Map::size).sum()), backup.out());
            CliRun json = CliRun.of("backup", "--json", "--from", at, "--as-of", Long.toString(id), "--to", copy.resolveSibling("copy-json").toString());
            assertEquals(Main.OK, json.code(), json.toString());
            assertTrue(json.out().strip().startsWith("{") && json.out().strip().lines().count() == 1, "one object on stdout: " + json.out());
            assertTrue(json.out().matches("(?s).*\"seconds\":[0-9.]+[,}].*"), "seconds as a number: " + json.out());

            try (ChildJvm follow = ChildJvm.start(Main.class, "backup", "--from", at, "--follow", "--retention", "keepLast(3)", "--to", standby.toString())) {
                follow.awaitLine("image of snapshot", 120);
                HttpResponse<String> posted = http.send(HttpRequest.newBuilder(URI.create("http://" + at + "/api/snapshots?rank=1"))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(201, posted.statusCode(), posted.body());
                declared = Long.parseLong(posted.body().replaceAll("\\D", ""));
                follow.awaitLine("standby holds server snapshot " + declared, 120);
                assertEquals(143, follow.terminate(), "SIGTERM (128 + 15) stops the follow through its shutdown hook");
            }
            assertEquals(143, server.terminate(), "SIGTERM ends the server through its shutdown hook");
        }
        StoreAssert.assertStoreEquals(model, copy);
        try (Varve s = Varve.open(SmallStore.config(standby).build());
             SnapshotView v = s.asOf(Standby.localSnapshot(standby, declared).orElseThrow())) {
            StoreAssert.assertTablesEqual(model, v.tables(), v::table, "standby as of server snapshot " + declared);
        }
        CliRun verified = CliRun.of("verify", standby.toString());
        assertEquals(Main.OK, verified.code(), verified.toString());
        assertTrue(verified.out().contains("standbySnapshotMap: 2"), "the image's snapshot and the one declared: " + verified.out());
        // a digit of the map's first line (not its last, which a crash may tear) flipped: damage, named
        Path map = standby.resolve(Standby.SNAPSHOT_MAP);
        String text = Files.readString(map, StandardCharsets.US_ASCII);
        int firstLine = text.indexOf('\n') + 1;
        int digit = text.indexOf(' ', text.indexOf(' ', firstLine) + 1) - 1;
        Files.writeString(map, text.substring(0, digit) + (char) ('0' + (text.charAt(digit) - '0' + 1) % 10) + text.substring(digit + 1),
                StandardCharsets.US_ASCII);
        CliRun damaged = CliRun.of("verify", standby.toString());
        assertEquals(Main.DAMAGE, damaged.code(), damaged.toString());
        assertTrue(damaged.out().contains(map.toString()) && damaged.out().contains("standbySnapshotMap: damaged"), damaged.out());
        try (Varve reopened = Varve.open(SmallStore.fresh(source).build())) {
            assertEquals(0, reopened.recoveryReport().replayedRecords(), "the hook closed the store cleanly: " + reopened.recoveryReport());
        }
    }

    /**
     * A sender whose WAL segments are over the default: the follow says, when the standby exists and again in its
     * report at the end, the settings the standby opens with, the sender's segment size among them; and
     * {@link StoreInspector#detectConfig} opens the standby, as the README says, reading that size from its WAL.
     */
    @Test
    @Timeout(180)
    void aFollowNamesTheSettingsItsStandbyOpensWith() throws Exception {
        Path standby = dir.resolve("standby");
        long segment = ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT + (1 << 20);
        byte[] key = "k".getBytes(StandardCharsets.UTF_8);
        byte[] value = "v".getBytes(StandardCharsets.UTF_8);
        VarveConfig sender = SmallStore.config(dir.resolve("source")).walSegmentSize(segment).build();
        String settings = "pageSize=" + sender.pageSize() + ", partitions=" + sender.partitions() + ", walSegmentSize=" + segment
                + ", dataRegionSize=" + ConfigLimits.DATA_REGION_SIZE_DEFAULT; // the sender's 16 MiB is under the default
        try (Varve store = Varve.open(sender);
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            store.table("t").put(key, value);
            String at = "127.0.0.1:" + server.address().getPort();
            try (ChildJvm follow = ChildJvm.start(Main.class, "backup", "--from", at, "--follow", "--to", standby.toString())) {
                assertEquals("standby " + standby + " opens with " + settings, follow.awaitLine("standby ", 120));
                assertEquals(143, follow.terminate(), follow.output());
                assertTrue(follow.output().contains(String.join("\n", "opensWith:", "  pageSize: " + sender.pageSize(),
                        "  partitions: " + sender.partitions(), "  walSegmentSize: " + segment)), follow.output());
            }
        }
        VarveConfig detected = StoreInspector.detectConfig(standby);
        assertEquals(segment, detected.walSegmentSize(), "read from the standby's WAL");
        try (Varve s = Varve.open(detected)) {
            assertArrayEquals(value, s.table("t").get(key));
        }
    }

    /** The status line of a GET of /metrics from {@code at} with the Host header a browser would send for {@code host}. */
    private static String statusLine(String at, String host) throws IOException {
        String[] hp = at.split(":");
        try (Socket socket = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("GET /metrics HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            return new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }

    private static void assertUsage(String expected, String... args) {
        CliRun r = CliRun.of(args);
        assertEquals(Main.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains(expected), r.toString());
    }
}
