package dev.varve.server;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The arguments of one command: {@code --name value} options, {@code --flag} switches and positional arguments.
 * Unknown options are errors, so a typo never passes silently.
 */
final class CommandArgs {
    private final Map<String, String> options = new HashMap<>();
    private final List<String> positional = new ArrayList<>();

    CommandArgs(String[] args, int from, Set<String> valued, Set<String> flags) {
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("--")) {
                if (flags.contains(a)) {
                    options.put(a, "true");
                } else if (valued.contains(a)) {
                    if (i + 1 >= args.length) throw new IllegalArgumentException("option " + a + " needs a value");
                    options.put(a, args[++i]);
                } else {
                    throw new IllegalArgumentException("unknown option " + a);
                }
            } else {
                positional.add(a);
            }
        }
    }

    String get(String name) {
        return options.get(name);
    }

    String required(String name) {
        String v = options.get(name);
        if (v == null) throw new IllegalArgumentException("missing option " + name);
        return v;
    }

    boolean flag(String name) {
        return options.containsKey(name);
    }

    List<String> positional() {
        return positional;
    }

    static long parseLong(String name, String text) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " is not a number: " + text);
        }
    }

    /** HOST:PORT, with the port in 1..65535. */
    static InetSocketAddress hostPort(String name, String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1) throw new IllegalArgumentException(name + " must be HOST:PORT, was " + text);
        long port = parseLong(name + " port", text.substring(colon + 1));
        if (port < 1 || port > 65535) throw new IllegalArgumentException(name + " port must be 1..65535, was " + port);
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        return new InetSocketAddress(host, (int) port);
    }
}
