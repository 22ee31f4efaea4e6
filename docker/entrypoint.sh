#!/bin/sh
# Tidemark container entrypoint, with the official mongo image's contract so compose files carry over:
#   MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD (or MONGO_INITDB_ROOT_USERNAME_FILE /
#   MONGO_INITDB_ROOT_PASSWORD_FILE, e.g. Docker secrets) create a root user on the first start (an
#   empty data directory) and make the server run with access control (--auth), on every start.
# Arguments starting with "-" are flags for tidemark; any other command runs as given.
set -eu

# VAR or VAR_FILE (not both) -> VAR; VAR_FILE is unset so it does not reach the server.
file_env() {
    var="$1"
    file_var="${var}_FILE"
    eval "value=\${$var:-}"
    eval "file_value=\${$file_var:-}"
    if [ -n "$value" ] && [ -n "$file_value" ]; then
        echo "error: both $var and $file_var are set (but are exclusive)" >&2
        exit 1
    fi
    if [ -n "$file_value" ]; then
        value="$(cat "$file_value")"
    fi
    eval "$var=\$value"
    unset "$file_var"
}

if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
    set -- tidemark "$@"
fi

if [ "$1" = "tidemark" ]; then
    file_env MONGO_INITDB_ROOT_USERNAME
    file_env MONGO_INITDB_ROOT_PASSWORD
    root_user="$MONGO_INITDB_ROOT_USERNAME"
    root_password="$MONGO_INITDB_ROOT_PASSWORD"
    unset MONGO_INITDB_ROOT_USERNAME MONGO_INITDB_ROOT_PASSWORD
    if [ -n "$root_user" ] || [ -n "$root_password" ]; then
        if [ -z "$root_user" ] || [ -z "$root_password" ]; then
            echo "error: MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD must be set together" >&2
            exit 1
        fi
        dbpath=/data
        auth=no
        previous=""
        for arg in "$@"; do
            case "$arg" in
                --dbpath=*) dbpath="${arg#--dbpath=}" ;;
                --auth) auth=yes ;;
            esac
            if [ "$previous" = "--dbpath" ]; then dbpath="$arg"; fi
            previous="$arg"
        done
        mkdir -p "$dbpath"
        if [ -z "$(ls -A "$dbpath")" ]; then
            printf '%s' "$root_password" | python -m tidemark.auth.bootstrap --dbpath "$dbpath" --username "$root_user"
        fi
        if [ "$auth" = no ]; then
            set -- "$@" --auth
        fi
    fi
    unset root_password
fi

exec "$@"
