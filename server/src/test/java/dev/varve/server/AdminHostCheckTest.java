package dev.varve.server;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin endpoint against a hostile web page in a browser on the same host: a page whose name was made to resolve
 * to 127.0.0.1 (DNS rebinding) reads nothing, and a cross-site form POST declares no snapshot, while the clients that
 * are not browsers, and the dashboard's own requests, are served as before. Raw requests over a real socket, with
 * the headers a browser sends.
 */
@Timeout(60)
class AdminHostCheckTest {
    @TempDir
    Path dir;
    private Varve store;
    private VarveServer server;
    private HttpProbe http;

    @BeforeEach
    void start() {
        store = Varve.open(SmallStore.config(dir).checkpointFrequency(Duration.ofHours(1)).build());
        store.table("accounts").put("alice".getBytes(StandardCharsets.UTF_8), "secret-balance".getBytes(StandardCharsets.UTF_8));
        server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0),
                new ServerOptions().allowWrites(true).allowedHosts("varve-1.internal", "Metrics.Example."));
        http = new HttpProbe(server.address());
    }

    @AfterEach
    void stop() {
        if (server != null) server.close();
        if (store != null) store.close();
    }

    private String request(String method, String target, String... headers) throws IOException {
        StringBuilder b = new StringBuilder(method + " " + target + " HTTP/1.1\r\n");
        for (String h : headers) b.append(h).append("\r\n");
        b.append("Connection: close\r\n\r\n");
        return http.raw(b.toString().getBytes(StandardCharsets.US_ASCII), Duration.ofSeconds(10));
    }

    /** The stored value as /api/get answers it. */
    private static final String SECRET = Base64.getEncoder().encodeToString("secret-balance".getBytes(StandardCharsets.UTF_8));

    private static String status(String reply) {
        return reply.substring(0, reply.indexOf("\r\n"));
    }

    @Test
    void aReboundNameReadsNothing() throws Exception {
        String reply = request("GET", "/api/get?table=accounts&key=alice", "Host: evil.example:" + server.address().getPort());
        assertEquals("HTTP/1.1 403 Forbidden", status(reply));
        assertFalse(reply.contains(SECRET), reply);
        assertTrue(reply.contains("evil.example") && reply.contains("allowedHosts"), "names the host and the setting: " + reply);
        assertEquals("HTTP/1.1 403 Forbidden", status(request("GET", "/metrics", "Host: evil.example")));
        assertEquals("HTTP/1.1 403 Forbidden", status(request("GET", "/", "Host: localhost.evil.example")));
    }

    @Test
    void addressesLocalhostTheAllowedNamesAndHttp10ClientsWithoutHostAreServed() throws Exception {
        int port = server.address().getPort();
        for (String host : new String[]{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.", "[::1]:" + port, "10.1.2.3",
                "varve-1.internal:" + port, "VARVE-1.Internal", "metrics.example"}) {
            String reply = request("GET", "/api/get?table=accounts&key=alice", "Host: " + host);
            assertEquals("HTTP/1.1 200 OK", status(reply), host);
            assertTrue(reply.contains(SECRET), host);
        }
        String http10 = http.raw("GET /api/tables HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII), Duration.ofSeconds(10));
        assertTrue(http10.startsWith("HTTP/1.1 200"), "HTTP/1.0, no Host: " + http10);
        assertTrue(request("GET", "/api/tables").startsWith("HTTP/1.1 400"), "HTTP/1.1 without Host is a bad request (RFC 9112 3.2)");
        assertEquals(200, http.get("/api/tables").statusCode(), "Java's HTTP client");
    }

    @Test
    void aCrossSiteFormPostDeclaresNoSnapshot() throws Exception {
        String host = "Host: 127.0.0.1:" + server.address().getPort();
        long before = store.snapshots().size();
        String reply = request("POST", "/api/snapshots?rank=1", host, "Origin: http://evil.example",
                "Content-Type: application/x-www-form-urlencoded", "Content-Length: 0");
        assertEquals("HTTP/1.1 403 Forbidden", status(reply));
        assertTrue(reply.contains("evil.example"), reply);
        assertEquals("HTTP/1.1 403 Forbidden", status(request("POST", "/api/snapshots?rank=1", host, "Origin: null", "Content-Length: 0")),
                "a sandboxed page or a file");
        assertEquals(before, store.snapshots().size(), "nothing declared");

        // the endpoint's own page, and clients that send no Origin, still declare
        assertTrue(request("POST", "/api/snapshots?rank=1", host, "Origin: http://127.0.0.1:" + server.address().getPort(), "Content-Length: 0")
                .startsWith("HTTP/1.1 201"));
        assertTrue(request("POST", "/api/snapshots?rank=1", host, "Content-Length: 0").startsWith("HTTP/1.1 201"));
        assertEquals(before + 2, store.snapshots().size());
    }

    @Test
    void allowedHostsTakesNamesOnly() {
        for (String bad : new String[]{"", " ", "http://x", "x:7070", "[::1]", "a b"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ServerOptions().allowedHosts(bad), bad);
            assertTrue(e.getMessage().contains("allowedHosts"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new ServerOptions().allowedHosts((String) null));
        assertThrows(IllegalArgumentException.class, () -> new ServerOptions().allowedHosts((String[]) null));
    }
}
