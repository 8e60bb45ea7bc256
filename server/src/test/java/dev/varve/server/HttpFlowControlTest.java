package dev.varve.server;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HTTP flow control over a real socket: a client that pipelines requests for large answers and reads none of them
 * gets only as many answers as the write buffer and the sockets hold, the rest once it reads again.
 */
@Timeout(120)
class HttpFlowControlTest {
    /** Under netty's limit of 128 unanswered requests on a connection, which would close it. */
    private static final int REQUESTS = 120;
    private static final byte[] GET_BIG = "GET /api/get?table=t&key=big HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] GET_BIG_LAST = "GET /api/get?table=t&key=big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            .getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dir;

    @Test
    void aClientThatStopsReadingIsAnsweredOnlyAsFarAsTheBuffersHoldAndOthersAreStillServed() throws Exception {
        try (Varve store = Varve.open(SmallStore.config(dir).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0),
                     new ServerOptions().idleTimeout(Duration.ofMinutes(2)))) { // the stalled client is not closed meanwhile
            store.table("t").put("big".getBytes(StandardCharsets.UTF_8), new byte[512 << 10]); // answers of ~700 KB each
            long readsBefore = store.metrics().reads();
            try (Socket s = new Socket()) {
                s.setReceiveBufferSize(4096);
                s.connect(server.address(), 5_000);
                OutputStream out = s.getOutputStream();
                for (int i = 0; i < REQUESTS - 1; i++) out.write(GET_BIG);
                out.write(GET_BIG_LAST);
                out.flush();

                // every answer is one point read: without flow control all of them, some 84 MB, are queued for a
                // client that reads nothing; with it, about a 4 MiB watermark and the socket buffers' worth
                long answered = settledReads(store) - readsBefore;
                assertTrue(answered < REQUESTS / 2, answered + " of " + REQUESTS + " answers were made for a client that reads none");
                assertEquals(200, new HttpProbe(server.address()).get("/api/tables").statusCode(), "other clients are served meanwhile");

                // reading again resumes the answers: all of them arrive, then the server closes as the last one asked
                s.setSoTimeout(30_000);
                assertEquals(REQUESTS, countOk(s.getInputStream()));
            }
            assertEquals(REQUESTS, store.metrics().reads() - readsBefore);
        }
    }

    /** The store's point reads once they have stopped changing for a second (the server answers nothing more). */
    private static long settledReads(Varve store) throws InterruptedException {
        long last = store.metrics().reads();
        for (int unchanged = 0; unchanged < 10; ) {
            Thread.sleep(100);
            long now = store.metrics().reads();
            unchanged = now == last ? unchanged + 1 : 0;
            last = now;
        }
        return last;
    }

    /** Status lines "HTTP/1.1 200" read until the server closes; a base64 body never holds one ('H' starts it only). */
    private static int countOk(InputStream in) throws Exception {
        byte[] pattern = "HTTP/1.1 200".getBytes(StandardCharsets.US_ASCII);
        byte[] buf = new byte[1 << 16];
        int matched = 0;
        int count = 0;
        for (int n; (n = in.read(buf)) > 0; ) {
            for (int i = 0; i < n; i++) {
                matched = buf[i] == pattern[matched] ? matched + 1 : buf[i] == pattern[0] ? 1 : 0;
                if (matched == pattern.length) {
                    count++;
                    matched = 0;
                }
            }
        }
        return count;
    }
}
