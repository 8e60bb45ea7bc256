package dev.varve.server;

import java.util.Locale;
import java.util.Set;

/**
 * Whether an admin request may have come from a web page that should not reach the store. The endpoint binds loopback
 * and needs no password, so a browser on the same host is the way in for a hostile page:
 * <ul>
 *   <li><b>DNS rebinding</b>: a page at {@code http://evil.example:7070} whose name then resolves to 127.0.0.1 reads
 *   the endpoint as its own origin ({@code /api/get} returns stored values). Its requests carry {@code Host:
 *   evil.example}, so only names the server answers to are served: IP literals (a page cannot rebind an address),
 *   {@code localhost}, and the names the operator allows ({@link ServerOptions#allowedHosts}).</li>
 *   <li><b>Cross-site requests</b>: a page's form can POST to {@code http://127.0.0.1:7070/api/snapshots} without
 *   reading the answer, which declares a snapshot when writes are allowed. Browsers name the page in {@code Origin}
 *   on every such request, so a request with an {@code Origin} other than the endpoint's own is refused.</li>
 * </ul>
 * Clients that are not browsers (Prometheus, curl, the {@code varve} tool) send a {@code Host} the check accepts and
 * no {@code Origin}. A request without {@code Host} (HTTP/1.0) is served: browsers always send one. The host checked is
 * the one the request names: its target's, when the target is in absolute form, else its {@code Host} header.
 */
final class HostCheck {
    private final Set<String> allowedHosts;

    /** @param allowedHosts lower-case names served besides IP literals and {@code localhost} */
    HostCheck(Set<String> allowedHosts) {
        this.allowedHosts = allowedHosts;
    }

    /** Why the request must be refused (a message for its 403), or null when it may be served. */
    String refusal(String host, String origin) {
        if (host != null && !served(hostName(host)))
            return "Host '" + host + "' is not a name this server answers to (a check against DNS rebinding); "
                    + "allow it with ServerOptions.allowedHosts or varve serve --allowed-host";
        if (origin != null && (host == null || !origin.equalsIgnoreCase("http://" + host)))
            return "a request from the page at Origin '" + origin + "' is refused: the admin endpoint serves only its own pages (a check "
                    + "against cross-site requests)";
        return null;
    }

    private boolean served(String name) {
        if (name.isEmpty()) return false;
        String n = name.toLowerCase(Locale.ROOT);
        if (n.endsWith(".")) n = n.substring(0, n.length() - 1); // the absolute form of the same name
        return n.equals("localhost") || isIpLiteral(n) || allowedHosts.contains(n);
    }

    /** The name or address of a Host header's value, without its port ({@code [::1]:7070} gives {@code [::1]}). */
    static String hostName(String host) {
        String h = host.trim();
        if (h.startsWith("[")) {
            int end = h.indexOf(']');
            return end < 0 ? "" : h.substring(0, end + 1);
        }
        int colon = h.indexOf(':');
        return colon < 0 ? h : h.substring(0, colon);
    }

    /** A dotted IPv4 address or a bracketed IPv6 one: names no DNS answer can point elsewhere. */
    static boolean isIpLiteral(String name) {
        if (name.startsWith("[") && name.endsWith("]")) {
            String v6 = name.substring(1, name.length() - 1);
            return !v6.isEmpty() && v6.chars().allMatch(c -> Character.digit(c, 16) >= 0 || c == ':' || c == '.');
        }
        String[] parts = name.split("\\.", -1);
        if (parts.length != 4) return false;
        for (String p : parts) {
            if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9') || Integer.parseInt(p) > 255) return false;
        }
        return true;
    }
}
