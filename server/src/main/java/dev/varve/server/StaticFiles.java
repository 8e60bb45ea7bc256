package dev.varve.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;

/**
 * The dashboard's files, served from the jar: a fixed list, so no request path ever reaches the class path or the
 * file system. Loaded once.
 */
final class StaticFiles {
    private static final String BASE = "/dev/varve/server/dashboard/";
    private static final Map<String, String[]> FILES = Map.of(
            "/", new String[]{"index.html", "text/html; charset=utf-8"},
            "/index.html", new String[]{"index.html", "text/html; charset=utf-8"},
            "/dashboard.js", new String[]{"dashboard.js", "text/javascript; charset=utf-8"},
            "/dashboard.css", new String[]{"dashboard.css", "text/css; charset=utf-8"});

    private final Map<String, AdminRoutes.Response> loaded;

    StaticFiles() {
        HashMap<String, AdminRoutes.Response> m = new HashMap<>();
        for (Map.Entry<String, String[]> e : FILES.entrySet()) m.put(e.getKey(), new AdminRoutes.Response(200, e.getValue()[1], read(e.getValue()[0])));
        loaded = Map.copyOf(m);
    }

    /** The file served at {@code path}, or null. */
    AdminRoutes.Response get(String path) {
        return loaded.get(path);
    }

    private static byte[] read(String name) {
        try (InputStream in = StaticFiles.class.getResourceAsStream(BASE + name)) {
            if (in == null) throw new IllegalStateException("the server jar lacks its dashboard file " + name);
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the dashboard file " + name, e);
        }
    }
}
