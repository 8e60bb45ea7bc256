package dev.varve.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.openqa.selenium.json.Json;

/** HTTP from the tests' side: well-formed requests through the JDK client, hostile ones over raw sockets. */
final class HttpProbe {
    private final InetSocketAddress server;
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    HttpProbe(InetSocketAddress server) {
        this.server = server;
    }

    HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        return send("GET", pathAndQuery);
    }

    HttpResponse<String> send(String method, String pathAndQuery) throws IOException, InterruptedException {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getPort() + pathAndQuery))
                .method(method, HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(20)).build();
        return client.send(r, HttpResponse.BodyHandlers.ofString());
    }

    /** The JSON object of a 2xx or 4xx answer. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> json(HttpResponse<String> r) {
        return (Map<String, Object>) new Json().toType(r.body(), Map.class);
    }

    /**
     * Sends raw bytes and reads whatever comes back until the server closes the connection or {@code readTimeout}
     * passes; returns the text received (empty when the server just closed).
     */
    String raw(byte[] request, Duration readTimeout) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(server, 5_000);
            s.setSoTimeout((int) readTimeout.toMillis());
            OutputStream out = s.getOutputStream();
            try {
                out.write(request);
                out.flush();
            } catch (IOException serverClosedFirst) {
                // the server may close on the first bytes it refuses; read what it said
            }
            return readAll(s.getInputStream());
        }
    }

    static String readAll(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        byte[] buf = new byte[8192];
        try {
            int n;
            while ((n = in.read(buf)) > 0) sb.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
        } catch (SocketTimeoutException e) {
            sb.append("<timeout>");
        } catch (IOException reset) {
            sb.append("<reset>");
        }
        return sb.toString();
    }
}
