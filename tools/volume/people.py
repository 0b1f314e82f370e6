"""Who buys in the made-up year: names, addresses and mail domains (reserved `example`
domains only: no mail of a fill can reach anyone), and the words of the shop's staff."""

from __future__ import annotations

FIRST_NAMES = [
    ("María", "maria"), ("José", "jose"), ("Guadalupe", "guadalupe"), ("Juan", "juan"),
    ("Fernanda", "fernanda"), ("Luis", "luis"), ("Ximena", "ximena"), ("Carlos", "carlos"),
    ("Valeria", "valeria"), ("Jorge", "jorge"), ("Sofía", "sofia"), ("Miguel", "miguel"),
    ("Camila", "camila"), ("Alejandro", "alejandro"), ("Daniela", "daniela"),
    ("Ricardo", "ricardo"),
    ("Andrea", "andrea"), ("Francisco", "francisco"), ("Regina", "regina"), ("Eduardo", "eduardo"),
    ("Itzel", "itzel"), ("Arturo", "arturo"), ("Mariana", "mariana"), ("Héctor", "hector"),
    ("Renata", "renata"), ("Emiliano", "emiliano"), ("Paola", "paola"), ("Santiago", "santiago"),
    ("Ana", "ana"), ("Diego", "diego"), ("Lucía", "lucia"), ("Raúl", "raul"),
]  # fmt: skip
LAST_NAMES = [
    ("Hernández", "hernandez"), ("García", "garcia"), ("Martínez", "martinez"),
    ("López", "lopez"), ("González", "gonzalez"), ("Pérez", "perez"), ("Rodríguez", "rodriguez"),
    ("Sánchez", "sanchez"), ("Ramírez", "ramirez"), ("Cruz", "cruz"), ("Flores", "flores"),
    ("Gómez", "gomez"), ("Morales", "morales"), ("Vázquez", "vazquez"), ("Reyes", "reyes"),
    ("Jiménez", "jimenez"), ("Torres", "torres"), ("Díaz", "diaz"), ("Gutiérrez", "gutierrez"),
    ("Ruiz", "ruiz"), ("Mendoza", "mendoza"), ("Aguilar", "aguilar"), ("Ortiz", "ortiz"),
    ("Castillo", "castillo"), ("Romero", "romero"), ("Moreno", "moreno"), ("Chávez", "chavez"),
    ("Rivera", "rivera"), ("Juárez", "juarez"), ("Domínguez", "dominguez"),
]  # fmt: skip
CITIES = [
    ("Ciudad de México", "CDMX", "06"), ("Guadalajara", "Jalisco", "44"),
    ("Monterrey", "Nuevo León", "64"), ("Puebla", "Puebla", "72"), ("Oaxaca", "Oaxaca", "68"),
    ("Mérida", "Yucatán", "97"), ("Querétaro", "Querétaro", "76"), ("León", "Guanajuato", "37"),
    ("Tijuana", "Baja California", "22"), ("Morelia", "Michoacán", "58"),
    ("Toluca", "Estado de México", "50"), ("Veracruz", "Veracruz", "91"),
    ("San Luis Potosí", "San Luis Potosí", "78"), ("Chihuahua", "Chihuahua", "31"),
]  # fmt: skip
STREETS = [
    "Avenida Juárez", "Calle Hidalgo", "Avenida Reforma", "Calle Morelos", "Calle 5 de Mayo",
    "Avenida Insurgentes", "Calle Allende", "Calle Zaragoza", "Avenida Universidad",
    "Calle Independencia", "Calle Guerrero", "Avenida Revolución",
]  # fmt: skip
COLONIES = [
    "Centro", "Del Valle", "Roma Norte", "Americana", "Chapultepec", "San Benito", "Jardines",
    "Las Flores", "La Paz", "Reforma", "Santa María", "Obrera",
]  # fmt: skip
DOMAINS = ["example.com", "example.net", "example.org", "correo.example"]
# Why staff refunded (the shop's staff write in Spanish).
REFUND_REASONS = [
    "Devolución del cliente", "Producto dañado en el envío", "Pieza con defecto",
    "Cambio de opinión del cliente", "Faltó una pieza en el paquete",
]  # fmt: skip
# Monthly plans of the shop's subscriptions (the provider's price ids).
PRICE_IDS = ["plan-cafe-mensual", "plan-talavera-trimestral", "plan-mezcal-mensual"]
