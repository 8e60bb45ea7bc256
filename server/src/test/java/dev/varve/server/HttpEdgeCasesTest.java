package dev.varve.server;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin endpoint where HTTP clients differ from the happy path: deadlines counted from the accept (so bytes
 * trickled before the protocol is known do not stretch them), 405 with {@code Allow}, the host a request names, and
 * HTTP/1.0 keep-alive. The idle timeout is a minute here: every cut seen in these tests is a deadline's, not idleness.
 */
@Timeout(120)
class HttpEdgeCasesTest {
    private static final Duration READ = Duration.ofSeconds(15);

    @TempDir
    Path dir;
    private Varve store;
    private VarveServer server;
    private HttpProbe http;

    @BeforeEach
    void start() {
        store = Varve.open(SmallStore.config(dir).build());
        store.table("accounts").put(bytes("alice"), bytes("10"));
        server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions()
                .requestTimeout(Duration.ofSeconds(1)).idleTimeout(Duration.ofMinutes(1)));
        http = new HttpProbe(server.address());
    }

    @AfterEach
    void stop() {
        if (server != null) server.close();
        if (store != null) store.close();
    }

    @Test
    void aFirstRequestStartedButNotFinishedGets408AtTheDeadlineOfTheAccept() throws Exception {
        // three bytes, fewer than the shipping magic, then nothing: the protocol is HTTP from the first byte
        String reply = http.raw(bytes("GET"), READ);
        assertTrue(reply.startsWith("HTTP/1.1 408"), "cut at the request deadline, not left to the idle timeout: " + reply);
    }

    @Test
    void aPrefixOfTheShippingMagicAndThenSilenceIsClosedAtTheRequestDeadline() throws Exception {
        assertEquals("", http.raw(new byte[]{'V', 'R', 'V'}, READ), "closed at the request deadline, not the idle timeout");
        assertEquals("", http.raw(new byte[0], READ), "a connection that sends nothing is closed as well");
    }

    @Test
    void aMethodAResourceDoesNotTakeGets405NamingTheOnesItDoes() throws Exception {
        HttpResponse<String> delete = http.send("DELETE", "/api/tables");
        assertEquals(405, delete.statusCode());
        assertEquals("GET, HEAD", delete.headers().firstValue("Allow").orElse(null));
        HttpResponse<String> getRank = http.get("/api/rank?id=1&rank=2");
        assertEquals(405, getRank.statusCode(), "the rank resource exists, for POST: " + getRank.body());
        assertEquals("POST", getRank.headers().firstValue("Allow").orElse(null));
        assertTrue(getRank.body().contains("it takes POST"), getRank.body());
        assertEquals("GET, HEAD, POST", http.send("PUT", "/api/snapshots").headers().firstValue("Allow").orElse(null));
        assertEquals(404, http.send("PUT", "/no/such/thing").statusCode(), "an unknown resource is 404 whatever the method");
        assertEquals(405, http.send("POST", "/dashboard.js").statusCode());
    }

    @Test
    void aChunkSizeLineTooLongIsABadBodyNotAnOverlongTarget() throws Exception {
        String request = "POST /api/snapshots HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n" + "1".repeat(10_000) + "\r\n";
        String reply = http.raw(bytes(request), READ);
        assertTrue(reply.startsWith("HTTP/1.1 400"), reply);
        String longTarget = http.raw(bytes("GET /" + "a".repeat(10_000) + " HTTP/1.1\r\nHost: localhost\r\n\r\n"), READ);
        assertTrue(longTarget.startsWith("HTTP/1.1 414"), longTarget);
    }

    @Test
    void theHostCheckedIsTheOneTheRequestNames() throws Exception {
        String absolute = http.raw(bytes("GET http://evil.example/api/tables HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), READ);
        assertTrue(absolute.startsWith("HTTP/1.1 403") && absolute.contains("evil.example"), "an absolute target's host is checked: " + absolute);
        String ownHost = http.raw(bytes("GET http://localhost:1/api/tables HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"), READ);
        assertTrue(ownHost.startsWith("HTTP/1.1 200"), "and it is the one that counts: " + ownHost);
        String twoHosts = http.raw(bytes("GET /api/tables HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"), READ);
        assertTrue(twoHosts.startsWith("HTTP/1.1 400") && twoHosts.contains("one Host header"), twoHosts);
        String noHost = http.raw(bytes("GET /api/tables HTTP/1.1\r\nConnection: close\r\n\r\n"), READ);
        assertTrue(noHost.startsWith("HTTP/1.1 400") && noHost.contains("must have a Host header"), noHost);
        String http10 = http.raw(bytes("GET /api/tables HTTP/1.0\r\n\r\n"), READ);
        assertTrue(http10.startsWith("HTTP/1.1 200"), "HTTP/1.0 needs no Host: " + http10);
    }

    @Test
    void anHttp10KeepAliveAnswerSaysTheConnectionStaysOpen() throws Exception {
        try (Socket s = new Socket()) {
            s.connect(server.address(), 5_000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            for (int i = 0; i < 2; i++) { // the second request on the same connection is answered too
                out.write(bytes("GET /api/tables HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
                out.flush();
                String answer = readHeadAndBody(in);
                assertTrue(answer.startsWith("HTTP/1.1 200") && answer.toLowerCase().contains("connection: keep-alive"), answer);
            }
        }
    }

    /** One answer: its head, then as many body bytes as its Content-Length says. */
    private static String readHeadAndBody(InputStream in) throws Exception {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) throw new AssertionError("closed after " + head);
            head.append((char) b);
        }
        String lower = head.toString().toLowerCase();
        int at = lower.indexOf("content-length:");
        int length = Integer.parseInt(lower.substring(at + 15, lower.indexOf("\r\n", at)).trim());
        return head + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }
}
